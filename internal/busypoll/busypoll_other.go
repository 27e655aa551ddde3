//go:build !unix

package busypoll

import "net"

func (l *Listener) wrap(c net.Conn) net.Conn { return c }
