// Command mcpcage puts every MCP server in its own cage and keeps watch.
package main

import (
	"os"
)

func main() {
	os.Exit(Main())
}
