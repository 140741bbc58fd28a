package scan

import (
	"encoding/base64"
	"encoding/hex"
)

func b64(s string) string  { return base64.StdEncoding.EncodeToString([]byte(s)) }
func hexs(s string) string { return hex.EncodeToString([]byte(s)) }
