package gnetudp

// UseSendto switches e's WriteBatch to one sendto per datagram, the system
// call gnet's own UDP write path (Conn.SendTo) issues, so the benchmarks
// can compare it with sendmmsg. Call it before the first WriteBatch.
func UseSendto(e *Engine) {
	e.sys.perDatagram = true
	e.features.BatchSend = false
}
