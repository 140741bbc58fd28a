#!/usr/bin/env node
// The npm package's launcher: runs the prebuilt mcpcage binary for this
// platform with the same arguments, stdio and exit status. No dependencies,
// no install script; the binaries are in vendor/OS-ARCH/.
"use strict";
const { spawn } = require("child_process");
const path = require("path");
const fs = require("fs");

const os = { linux: "linux", darwin: "darwin", win32: "windows" }[process.platform];
const arch = { x64: "amd64", arm64: "arm64" }[process.arch];
const exe = path.join(__dirname, "..", "vendor", `${os}-${arch}`, os === "windows" ? "mcpcage.exe" : "mcpcage");
if (!os || !arch || !fs.existsSync(exe)) {
  process.stderr.write(`mcpcage: error: no prebuilt binary for ${process.platform}/${process.arch} in this package\n` +
    "mcpcage: hint: build it from source (go build ./cmd/mcpcage) on this platform\n");
  process.exit(1);
}
const child = spawn(exe, process.argv.slice(2), { stdio: "inherit" });
// The binary handles the signals itself (a stopped session exits 130/143);
// the launcher passes them on and waits for its status.
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => { try { child.kill(sig); } catch (_) {} });
}
child.on("error", (err) => {
  process.stderr.write(`mcpcage: error: cannot start ${exe}: ${err.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.exit(128 + (require("os").constants.signals[signal] || 0));
  }
  process.exit(code === null ? 1 : code);
});
