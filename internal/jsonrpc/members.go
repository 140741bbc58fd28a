package jsonrpc

import (
	"bytes"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Members calls visit with the name and the exact bytes of each top-level
// member of obj (a message's params or result, say), in order, until visit
// returns false. The values alias obj: nothing is copied, however large a
// value is (a tools/call's arguments can be as large as --max-line). It
// returns false when obj is not one valid JSON object (visit may have been
// called for the members before the fault), true when it is or when visit
// stopped the walk (the rest is not read).
func Members(obj []byte, visit func(name string, value []byte) bool) bool {
	// From a bytes.Buffer the decoder reads obj in place, not a copy; the
	// values are cut out of obj by offset, so they outlive the decoder.
	dec := jsontext.NewDecoder(bytes.NewBuffer(obj))
	if dec.PeekKind() != '{' {
		return false
	}
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return false
		}
		name := tok.String() // before SkipValue, which voids tok
		start := dec.InputOffset()
		if err := dec.SkipValue(); err != nil {
			return false
		}
		value := bytes.TrimLeft(obj[start:dec.InputOffset()], " \t\r\n:")
		if !visit(name, value) {
			return true
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return false
	}
	_, err := dec.ReadToken() // nothing after it
	return errors.Is(err, io.EOF)
}
