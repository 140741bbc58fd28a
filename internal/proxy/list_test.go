package proxy

import (
	"context"
	"encoding/json"
	"github.com/mcpcage/mcpcage/internal/proxy/proxytest"
	"strings"
	"testing"
	"time"
)

func TestListToolsPaged(t *testing.T) {
	srv := startFixture(t, "gosdk", "FIXTURE_PAGESIZE=2")
	l, err := ListTools(context.Background(), srv)
	if err != nil {
		t.Fatal(err)
	}
	if l.ProtocolVersion != "2025-11-25" {
		t.Errorf("version %q", l.ProtocolVersion)
	}
	if l.Instructions != "fixture server for proxy tests" {
		t.Errorf("instructions %q", l.Instructions)
	}
	if !strings.Contains(string(l.ServerInfo), `"name":"fixture"`) {
		t.Errorf("serverInfo %s", l.ServerInfo)
	}
	var names []string
	for _, raw := range l.Tools {
		var tool struct{ Name string }
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	// Five tools over three pages of two, in the server's order.
	if got := strings.Join(names, ","); got != "ask,die,echo,slow,work" {
		t.Errorf("tools %s", got)
	}
}

func TestListToolsEverything(t *testing.T) {
	srv := startEverything(t)
	l, err := ListTools(context.Background(), srv)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tools) < 5 || !strings.Contains(string(l.Tools[0]), `"name":"echo"`) {
		t.Errorf("%d tools, first %.100s", len(l.Tools), l.Tools[0])
	}
	if !strings.Contains(l.Instructions, "Everything Server") {
		t.Errorf("instructions %.60q", l.Instructions)
	}
}

func TestListToolsTimesOut(t *testing.T) {
	srv := startFixture(t, "stubborn")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := ListTools(ctx, srv)
	if err == nil || !strings.Contains(err.Error(), "did not answer initialize in time") {
		t.Fatalf("err = %v", err)
	}
	_ = srv.Stop(context.Background())
}

func TestListToolsServerExits(t *testing.T) {
	srv, err := proxytest.StartProcess(context.Background(), []string{"sh", "-c", "echo not an MCP server; exit 3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	_, err = ListTools(context.Background(), srv)
	if err == nil || !strings.Contains(err.Error(), "before answering initialize") && !strings.Contains(err.Error(), "not reading its input") {
		t.Fatalf("err = %v", err)
	}
}
