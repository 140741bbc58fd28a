// Package clients finds the MCP servers that desktop and command-line
// clients start, tells which run in a cage, and rewrites their entries in
// place to run through `mcpcage run`, or back.
//
// # Where
//
// The table in table.go is the one place that knows each client: its
// configuration files per operating system and in a project (the current
// directory), the file format (plain JSON, JSON with comments, TOML) and the
// keys that hold server entries. The operating system layout is a parameter
// (Layout), so every layout can be tested on any machine with a fake home.
//
// # The wrapped form
//
// Caging an entry changes only its command and its args; every other byte of
// the file stays as it was (comments, trailing commas, key order,
// indentation, unknown keys, the env block). An entry
//
//	"command": C, "args": [A1, ..., An]
//
// becomes
//
//	"command": "<absolute path of mcpcage>",
//	"args": ["run", "--name=<server name>", "--env=<NAME>"..., "--", C, A1, ..., An]
//
// where the name is the entry's own when `mcpcage run` accepts it, else made
// acceptable by CageName (and left out when nothing is left of it), with one --env=NAME per variable of the entry's env block, in the block's
// order, so the client keeps the values and mcpcage passes them by name
// (a value never reaches any argv). Flags are written in the --flag=value
// form, so the first argument that is exactly "--" always ends mcpcage's
// own arguments. C is moved into the array as written (the same bytes, so
// escapes survive), and so are A1..An with the whitespace and comments
// around them: the whitespace and comments before A1 move to "run", and A1
// gets the separator used between the other elements.
//
// Unwrapping reads the wrapped entry alone: the element after the first
// "--" becomes the command again, byte for byte, the elements after it the
// args, and the whitespace before "run" goes back before A1. So
// unwrap(fix(file)) is byte-identical to file, no backup needed, and an
// edit made to the rest of the file after caging is kept.
//
// An entry is recognised as caged when its command names mcpcage (the file
// name mcpcage, mcpcage.exe or mcpcage-*, or the running binary itself) and
// its first argument is "run".
//
// Codex's TOML gets the same treatment, by text: `command = C` and
// `args = [A1, ...]` in a [mcp_servers.NAME] table are rewritten at their
// byte offsets, and every edit is checked by decoding the result again.
//
// # Threat model
//
// Configuration files are written by the user, by the clients, and by any
// program the user ran; they may be malformed or hostile. Reading them never
// runs anything. An edit is written only when re-reading the result shows
// exactly the intended change and nothing else. Values of env variables,
// headers and arguments are inspected for clear-text secrets and shown only
// redacted (package secrets).
package clients
