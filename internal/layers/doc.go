// Package layers holds no code: its test checks that the library's imports
// follow the layering in docs/ARCHITECTURE.md (imports only point down) and
// that no library package imports a module the library does not need.
package layers
