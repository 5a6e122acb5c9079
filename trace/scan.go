package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
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

// fill is what the reader holds, read from the stream when it holds
// nothing; errTruncated at the stream's end.
func (s *scanner) fill() ([]byte, error) {
	if s.r.Buffered() == 0 {
		if _, err := s.r.Peek(1); err != nil {
			if err == io.EOF {
				return nil, errTruncated
			}
			return nil, err
		}
	}
	b, _ := s.r.Peek(s.r.Buffered())
	return b, nil
}

// str reads a string whose opening quote is consumed. The bytes are valid
// until the next call.
func (s *scanner) str() ([]byte, error) { return s.strMax(math.MaxInt) }

// strMax reads a string whose opening quote is consumed, keeping at most
// limit bytes of it as written (0: skipping it): a 50 MB string costs the
// reader's buffer, not 50 MB kept and copied. The bytes are valid until
// the next call.
func (s *scanner) strMax(limit int) ([]byte, error) {
	s.buf = s.buf[:0]
	escaped, cut := false, false
	bs := 0 // the run of backslashes ending what was read so far
	for {
		// Fast path: take the run up to the next quote.
		chunk, err := s.r.ReadSlice('"')
		s.read += int64(len(chunk))
		full := err == bufio.ErrBufferFull
		if err != nil && !full {
			if err == io.EOF {
				return nil, errTruncated
			}
			return nil, err
		}
		body := chunk
		if !full {
			body = chunk[:len(chunk)-1]
		}
		n := 0
		for i := len(body) - 1; i >= 0 && body[i] == '\\'; i-- {
			n++
		}
		if n == len(body) {
			bs += n
		} else {
			bs = n
		}
		escaped = escaped || bytes.IndexByte(body, '\\') >= 0
		if room := limit - len(s.buf); room < len(body) {
			body, cut = body[:max(room, 0)], true
		}
		s.buf = append(s.buf, body...)
		if full {
			continue
		}
		// The quote ends the string unless an odd run of backslashes precedes it.
		if bs%2 == 0 {
			break
		}
		if len(s.buf) < limit {
			s.buf = append(s.buf, '"')
		} else {
			cut = true
		}
		bs = 0
	}
	if escaped {
		if cut {
			s.buf = trimEscape(s.buf)
		}
		return unescape(s.buf)
	}
	return s.buf, nil
}

// trimEscape drops an escape a cut left unfinished at the end of b.
func trimEscape(b []byte) []byte {
	for i := max(0, len(b)-6); i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		need := 2
		if i+1 < len(b) && b[i+1] == 'u' {
			need = 6
		}
		if i+need > len(b) {
			return b[:i]
		}
		i++ // the escaped byte
	}
	return b
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
		_, err := s.strMax(0)
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
//
// It looks at the reader's buffer a run at a time, not a byte a call: an
// event's args are most of a trace's bytes, and none of them is kept.
func (s *scanner) skipNested() error {
	depth := 1
	for depth > 0 {
		b, err := s.fill()
		if err != nil {
			return err
		}
		i, quote := 0, false
	run:
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				quote = true
				i++
				break run
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					i++
					break run
				}
			}
		}
		s.r.Discard(i)
		s.read += int64(i)
		if quote {
			if _, err := s.strMax(0); err != nil {
				return err
			}
		}
	}
	return nil
}
