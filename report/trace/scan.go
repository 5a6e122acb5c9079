package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// scanner reads JSON from a stream one token at a time, without building
// values: a Chrome trace is gigabytes, and only a few fields of each
// event matter. It keeps no more than one string's bytes at a time.
type scanner struct {
	r    *bufio.Reader
	read int64 // bytes consumed, for progress
	buf  []byte
}

var errTruncated = errors.New("the trace ends in the middle (truncated?)")

func newScanner(r io.Reader) *scanner {
	return &scanner{r: bufio.NewReaderSize(r, 1<<20)}
}

func (s *scanner) fail(what string) error {
	return fmt.Errorf("not a JSON trace near byte %d: %s", s.read, what)
}

func (s *scanner) byte() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		if err == io.EOF {
			return 0, errTruncated
		}
		return 0, err
	}
	s.read++
	return c, nil
}

// next skips white space and returns the next byte, consumed.
func (s *scanner) next() (byte, error) {
	for {
		c, err := s.byte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			return c, nil
		}
	}
}

// str reads a string whose opening quote is consumed. The bytes are valid
// until the next call.
func (s *scanner) str() ([]byte, error) {
	s.buf = s.buf[:0]
	escaped := false
	for {
		// Fast path: take the run up to the next quote or backslash.
		chunk, err := s.r.ReadSlice('"')
		s.read += int64(len(chunk))
		if err == bufio.ErrBufferFull {
			s.buf = append(s.buf, chunk...)
			continue
		}
		if err != nil {
			if err == io.EOF {
				return nil, errTruncated
			}
			return nil, err
		}
		s.buf = append(s.buf, chunk[:len(chunk)-1]...)
		// The quote ends the string unless an odd run of backslashes precedes it.
		n := 0
		for i := len(s.buf) - 1; i >= 0 && s.buf[i] == '\\'; i-- {
			n++
		}
		if n%2 == 0 {
			break
		}
		s.buf = append(s.buf, '"')
		escaped = true
	}
	if !escaped {
		for _, c := range s.buf {
			if c == '\\' {
				escaped = true
				break
			}
		}
	}
	if escaped {
		return unescape(s.buf)
	}
	return s.buf, nil
}

func unescape(b []byte) ([]byte, error) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			out = append(out, b[i])
			continue
		}
		i++
		if i >= len(b) {
			return nil, errors.New("a string ends in a backslash")
		}
		switch b[i] {
		case '"', '\\', '/':
			out = append(out, b[i])
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			if i+4 >= len(b) {
				return nil, errors.New("a short \\u escape")
			}
			v, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 32)
			if err != nil {
				return nil, errors.New("a bad \\u escape")
			}
			out = utf8.AppendRune(out, rune(v))
			i += 4
		default:
			return nil, fmt.Errorf("a bad escape \\%c", b[i])
		}
	}
	return out, nil
}

// number reads a number whose first byte c is consumed.
func (s *scanner) number(c byte) (float64, error) {
	s.buf = append(s.buf[:0], c)
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				return 0, errTruncated
			}
			return 0, err
		}
		if c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+' {
			s.read++
			s.buf = append(s.buf, c)
			continue
		}
		s.r.UnreadByte()
		break
	}
	v, err := strconv.ParseFloat(string(s.buf), 64)
	if err != nil {
		return 0, s.fail(fmt.Sprintf("bad number %q", s.buf))
	}
	return v, nil
}

// skip skips a value whose first byte c is consumed.
func (s *scanner) skip(c byte) error {
	switch {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{' || c == '[':
		return s.skipNested()
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.number(c)
		return err
	case c == 't' || c == 'f' || c == 'n':
		for {
			c, err := s.r.ReadByte()
			if err != nil {
				return errTruncated
			}
			if c < 'a' || c > 'z' {
				s.r.UnreadByte()
				return nil
			}
			s.read++
		}
	}
	return s.fail(fmt.Sprintf("unexpected %q", c))
}

// skipNested skips an object or array whose opening bracket is consumed,
// counting brackets outside strings.
func (s *scanner) skipNested() error {
	depth := 1
	for depth > 0 {
		c, err := s.byte()
		if err != nil {
			return err
		}
		switch c {
		case '"':
			if _, err := s.str(); err != nil {
				return err
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return nil
}
