package gnetudp_test

import "net/netip"

// lo4 is the only address tests bind: nothing leaves the machine.
var lo4 = netip.MustParseAddrPort("127.0.0.1:0")
