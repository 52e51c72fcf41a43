package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"
)

// rawConn is one keep-alive HTTP/1.1 connection of the bench's own clients
// (the GET generator and the lifecycle's client). They share the two cores
// with the node and the broker, so they are built to cost little: a
// prepared request is written as it is, and the answer is parsed here,
// where http.Client would hand each request to a connection's goroutines
// and build a header map per answer (without its reads, ReadResponse was
// 28 % of the GET generator's CPU; the lifecycle's client and its
// connections' goroutines were about a tenth of the bench process's CPU
// at half of peak: BENCHMARKS.md).
type rawConn struct {
	addr    string
	timeout time.Duration
	c       net.Conn
	r       *bufio.Reader
}

// do sends req and reads the whole answer, into *body when body is not
// nil. A kept connection that the server closed while it was idle (EOF or
// a reset before any answer) is dialled again once; anything else is an
// error, after which the connection is closed.
func (c *rawConn) do(req []byte, body *[]byte) (int, error) {
	for {
		reused := c.c != nil
		if !reused {
			conn, err := net.Dial("tcp", c.addr)
			if err != nil {
				return 0, err
			}
			c.c, c.r = conn, bufio.NewReader(conn)
		}
		status, err := c.roundTrip(req, body)
		if err == nil {
			return status, nil
		}
		c.close()
		if !reused || !closedByPeer(err) {
			return 0, err
		}
	}
}

func (c *rawConn) roundTrip(req []byte, body *[]byte) (int, error) {
	// A server that never answers fails the request instead of holding
	// the sender.
	if err := c.c.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	if _, err := c.c.Write(req); err != nil {
		return 0, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, fmt.Errorf("bench: malformed status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bench: malformed status line %q", line)
	}
	length, chunked, closing := int64(-1), false, false
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, fmt.Errorf("bench: malformed header %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.ParseInt(string(value), 10, 64); err != nil || length < 0 {
				return 0, fmt.Errorf("bench: malformed Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	var dst io.Writer = io.Discard
	var buf *bytes.Buffer
	if body != nil {
		buf = bytes.NewBuffer((*body)[:0])
		dst = buf
	}
	switch {
	case chunked:
		err = c.readChunks(dst)
	case length >= 0 && body == nil:
		_, err = c.r.Discard(int(length))
	case length >= 0:
		_, err = io.CopyN(dst, c.r, length)
	default: // the body ends with the connection
		_, err = io.Copy(dst, c.r)
		closing = true
	}
	if err != nil {
		return 0, err
	}
	if buf != nil {
		*body = buf.Bytes()
	}
	if closing {
		c.close()
	}
	return status, nil
}

// readChunks copies a chunked body to w and reads its trailer.
func (c *rawConn) readChunks(w io.Writer) error {
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("bench: malformed chunk size %q", line)
		}
		if n == 0 {
			break
		}
		if w == io.Discard {
			_, err = c.r.Discard(int(n))
		} else {
			_, err = io.CopyN(w, c.r, n)
		}
		if err != nil {
			return err
		}
		if _, err := c.r.Discard(2); err != nil {
			return err
		}
	}
	for { // the trailer, up to its empty line
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return nil
		}
	}
}

func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (c *rawConn) close() {
	if c.c != nil {
		c.c.Close()
		c.c, c.r = nil, nil
	}
}
