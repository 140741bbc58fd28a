// Command fakehost is one host of the egress tests' own "internet": built
// static, run in a scratch image on a Docker network of the test's, under
// names the test gives it (network aliases). It serves:
//
//	:443  HTTPS with the certificate in $FAKEHOST_CERT / $FAKEHOST_KEY (PEM)
//	:80   the same over plain HTTP
//	:7000 raw TCP: greets "hello from $FAKEHOST_NAME" and echoes what it gets
//
// GET /bytes/N answers N bytes (the throughput benchmark); any other path
// answers a small JSON document naming the host and the path.
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

func main() {
	name := os.Getenv("FAKEHOST_NAME")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n, ok := strings.CutPrefix(r.URL.Path, "/bytes/"); ok {
			size, _ := strconv.ParseInt(n, 10, 64)
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			buf := make([]byte, 256<<10)
			for size > 0 {
				k := min(size, int64(len(buf)))
				if _, err := w.Write(buf[:k]); err != nil {
					return
				}
				size -= k
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"host": name, "path": r.URL.Path, "query": r.URL.RawQuery, "method": r.Method})
	})
	cert, err := tls.X509KeyPair([]byte(os.Getenv("FAKEHOST_CERT")), []byte(os.Getenv("FAKEHOST_KEY")))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakehost:", err)
		os.Exit(1)
	}
	go func() {
		srv := &http.Server{Addr: ":443", Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
		fmt.Fprintln(os.Stderr, srv.ListenAndServeTLS("", ""))
		os.Exit(1)
	}()
	go func() {
		fmt.Fprintln(os.Stderr, http.ListenAndServe(":80", h))
		os.Exit(1)
	}()
	ln, err := net.Listen("tcp", ":7000")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer c.Close()
			fmt.Fprintf(c, "hello from %s\n", name)
			br := bufio.NewReader(c)
			io.Copy(c, br)
		}()
	}
}
