package link

import (
	"net"
)

func rawDial(dir string) (net.Conn, error) {
	addr, release, err := shortPath(dir + "/" + SocketName)
	if err != nil {
		return nil, err
	}
	defer release()
	return net.Dial("unix", addr)
}

func listenRaw(path string) (net.Listener, error) { return net.Listen("unix", path) }
