#!/usr/bin/env bash
# The main job end to end, as a client would do it: start a real MCP server
# from npm in the cage through `mcpcage run`, speak MCP to it on stdin/stdout,
# then show the pins, a change being caught, and the audit log verified.
#
# It uses a state directory of its own (MCPCAGE_HOME), so it changes nothing
# of yours. Needs: bin/mcpcage (make build), Docker and the cage images
# (make setup).
set -euo pipefail
cd "$(dirname "$0")/.."

MCPCAGE=${MCPCAGE:-$PWD/bin/mcpcage}
export MCPCAGE_HOME=${MCPCAGE_HOME:-$(mktemp -d /tmp/mcpcage-demo.XXXXXX)}
export NO_COLOR=1
WORK=$(mktemp -d /tmp/mcpcage-demo-work.XXXXXX)
echo "hello from the host" > "$WORK/readme.txt"
# The cage runs the server as a non-root user (uid 1000): let it read the folder.
chmod 755 "$WORK"; chmod 644 "$WORK/readme.txt"
PKG=@modelcontextprotocol/server-filesystem
# The default name mcpcage derives from the package (launch.DeriveName;
# internal/launch TestDemoNameIsDerived keeps the two in step).
NAME=modelcontextprotocol__server-filesystem

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# session VERSION SECRET_ARG: one MCP session through the cage, as a client
# would hold it; prints the answers.
session() {
	coproc MC { "$MCPCAGE" run -- npx -y "$PKG@$1" "$WORK" 2> >(sed 's/^/   stderr: /' >&2); }
	local line
	send() { printf '%s\n' "$1" >&"${MC[1]}"; }
	# Bash closes a coprocess's descriptors in subshells: read here, print after.
	recv() { IFS= read -r -t 180 line <&"${MC[0]}" || { echo "no answer from mcpcage" >&2; exit 1; }; }
	send '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}'
	recv; echo "   ${line:0:160}"
	send '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	send '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
	recv; grep -o '"name":"[a-z_]*"' <<<"$line" | sed 's/"name":/   tool /' | tr -d '"'
	grep -q '"error"' <<<"$line" && echo "   ${line:0:400}"
	send '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"'"$WORK"'/readme.txt"}}}'
	recv; echo "   ${line:0:200}"
	send '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"'"$WORK"'/new.txt","content":"'"$2"'"}}}'
	recv; echo "   ${line:0:240}"
	exec {MC[1]}>&-
	wait "$MC_PID" || true
}

step "1. a real npm server in the cage: installed without scripts, no network, the folder read-only"
session 2025.8.21 "the-argument-value-is-never-logged"
[ ! -e "$WORK/new.txt" ] && echo "   the write to the read-only folder failed, as it should"

step "2. its tools were pinned on first use"
"$MCPCAGE" pins list

step "3. the package updates and its tools change: the session is locked until a person looks"
session 2026.8.31 "second-session-value" || true
"$MCPCAGE" diff "$NAME" | head -40 || true
"$MCPCAGE" approve --yes "$NAME"
session 2026.8.31 "third-session-value"

step "4. the audit log: every call recorded, no argument value, the chain intact"
"$MCPCAGE" audit show | tail -6
if grep -rqE "the-argument-value-is-never-logged|second-session-value|third-session-value" "$MCPCAGE_HOME/audit"; then
	echo "an argument value reached the log!" >&2; exit 1
fi
echo "   no argument value in the log"
"$MCPCAGE" audit verify

echo
echo "state kept in $MCPCAGE_HOME (remove it when done)"
