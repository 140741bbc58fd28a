package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/install"
	"github.com/mcpcage/mcpcage/internal/launch"
)

// TestOneHint: every error type that says what to do is read through the
// one interface, however it is wrapped: an empty hint on the way does not
// hide one further in.
func TestOneHint(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{withHint(errors.New("x"), "do this"), "do this"},
		{&launch.UsageError{Msg: "x", Fix: "write it so"}, "write it so"},
		{&cage.UpError{Err: errors.New("x"), Fix: "fix the cage"}, "fix the cage"},
		{&cage.UpError{Err: &launch.UsageError{Msg: "x", Fix: "from inside"}}, "from inside"},
		{&cage.UpError{Err: &install.ForeignError{Package: "p", Registry: "r", Detail: "d"}}, "if you trust them, allow each by name with --allow-dependency NAME"},
		{&guard.SetupError{Err: errors.New("x"), Fix: "make the folder"}, "make the folder"},
		{&ExitError{Code: 2, Err: fmt.Errorf("wrapped: %w", &launch.UsageError{Msg: "x", Fix: "deep"})}, "deep"},
		{&ExitError{Code: 1, Err: errors.New("no hint")}, ""},
	} {
		var _ hinter = &cage.AccessError{}
		if got := hintOf(c.err); got != c.want {
			t.Errorf("%T: hint %q, want %q", c.err, got, c.want)
		}
	}
}
