// Package fuzz holds the fuzz targets for every part of mcpcage that reads
// untrusted input: JSON-RPC framing and parsing, pins, the scanner, audit log
// records and client configuration files. `make test` runs each target for a
// few seconds; `make fuzz` runs them longer.
package fuzz
