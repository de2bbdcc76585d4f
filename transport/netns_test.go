package transport_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Network-namespace plumbing for tests that shape real traffic: the test
// re-executes its own binary under `unshare -n` (a fresh network namespace
// with only a loopback device, so tc changes nothing outside it), and the
// child brings lo up and installs its qdisc. It needs root, unshare(1) and
// tc(8) (iproute2); where any is missing or the kernel refuses the
// namespace, the test skips and says why.

// netnsEnv marks the child process that runs inside the namespace.
const netnsEnv = "TICKWIRE_TEST_NETNS"

// inNetns reports whether this process is the child inside the namespace.
func inNetns() bool { return os.Getenv(netnsEnv) == "1" }

// runInNetns runs test (the name of the calling Test function) again in a
// child process inside a new network namespace, passing args to the test
// binary, streams its output into t's log and fails t if it fails. It
// skips t, with the reason, when the namespace cannot be made.
func runInNetns(t *testing.T, test string, args ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace (unshare -n)")
	}
	for _, tool := range []string{"unshare", "tc", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s in PATH (iproute2 / util-linux): %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace here: unshare -n true: %v: %s", err, bytes.TrimSpace(out))
	}
	self, err := os.Executable()
	if err != nil {
		t.Skipf("cannot find the test binary to re-execute: %v", err)
	}
	cmdArgs := append([]string{"-n", self, "-test.run", "^" + test + "$", "-test.v"}, args...)
	cmd := exec.Command("unshare", cmdArgs...)
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		t.Log(line)
	}
	if err != nil {
		t.Fatalf("%s inside the namespace: %v", test, err)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+test)) {
		t.Fatalf("%s inside the namespace did not report a pass", test)
	}
}

// netnsRun runs one command inside the namespace (the child), failing t
// with its output if it fails.
func netnsRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// tbfLoopback brings lo up and shapes it with a token bucket filter:
// rate bytes/s, a burst of burst bytes, and a queue that holds latency's
// worth at rate (tbf drops what does not fit).
func tbfLoopback(t *testing.T, rate, burst int, latency string) {
	t.Helper()
	netnsRun(t, "ip", "link", "set", "lo", "up")
	netnsRun(t, "tc", "qdisc", "add", "dev", "lo", "root", "tbf",
		"rate", fmt.Sprintf("%dbit", rate*8), "burst", fmt.Sprint(burst), "latency", latency)
}

// liftTBF removes lo's qdisc: the bottleneck lifts.
func liftTBF(t *testing.T) {
	t.Helper()
	netnsRun(t, "tc", "qdisc", "del", "dev", "lo", "root")
}
