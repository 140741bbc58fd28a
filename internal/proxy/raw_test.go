package proxy

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"os"
	"strconv"
	"syscall"
	"time"
)

// runRawServer is a hand-written MCP server for what no SDK will produce:
// it answers initialize with $RAW_VERSION, and its "emit" method writes
// arbitrary bytes (base64 in params.b64) as its own output lines, and a
// notification params.pad bytes long, so tests
// can make it send malformed, oversized or batched messages. "die" exits
// with params.code; $RAW_DELAY delays its start; "killself" dies of SIGKILL; "hang" never answers; anything else gets {"echo":method}.
func runRawServer() {
	version := os.Getenv("RAW_VERSION")
	if version == "" {
		version = "2025-06-18"
	}
	out := bufio.NewWriter(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 64<<20)
	if d, err := time.ParseDuration(os.Getenv("RAW_DELAY")); err == nil {
		time.Sleep(d) // a server slow to start: nothing read until then
	}
	os.Stderr.WriteString("raw: ready\n")
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				B64  []string `json:"b64"`
				Pad  int      `json:"pad"`
				Code int      `json:"code"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method == "" {
			continue
		}
		reply := func(result string) {
			if m.ID != nil {
				out.WriteString(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + "}\n")
			}
		}
		switch m.Method {
		case "initialize":
			reply(`{"protocolVersion":` + strconv.Quote(version) + `,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}`)
		case "emit":
			for _, s := range m.Params.B64 {
				b, _ := base64.StdEncoding.DecodeString(s)
				out.Write(b)
				out.WriteString("\n")
			}
			if m.Params.Pad > 0 {
				out.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`)
				for i := 0; i < m.Params.Pad; i++ {
					out.WriteByte('x')
				}
				out.WriteString("\"}}\n")
			}
			reply(`{}`)
		case "die":
			out.Flush()
			os.Exit(m.Params.Code)
		case "killself":
			out.Flush()
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		case "hang":
		default:
			reply(`{"echo":` + strconv.Quote(m.Method) + `}`)
		}
		out.Flush()
	}
	os.Exit(0)
}
