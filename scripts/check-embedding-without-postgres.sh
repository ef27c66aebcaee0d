#!/usr/bin/env bash
# `make test`: a hub that depends on PushNative with the PostgreSQL trait off needs no libpq.
#
# A small hub package in a temporary directory depends on this checkout by path with
# `traits: []` and has one executable importing PushNative. SwiftPM plans its build without
# building (`--print-manifest-job-graph`, a few seconds) and the plan must link no object of
# DeviceRegistryPostgres and pass no -lpq. The same hub with the default traits is the control:
# its plan must link DeviceRegistryPostgres and -lpq, or this check could not see them.
#
# With `--build` it also builds that hub for real while pkg-config cannot find libpq (every
# other .pc file stays visible) and runs it with HAPI_PUSH_DATABASE_URL set: slow, not part of
# `make test`; the answer is documented in docs/configuration.md.
set -euo pipefail
SWIFT="${SWIFT:-swift}"
root="$(cd "$(dirname "$0")/.." && pwd)"
identity="$(basename "$root" | tr '[:upper:]' '[:lower:]')"
work="$(mktemp -d "${TMPDIR:-/tmp}/hapi-embedding-XXXXXX")"
trap 'rm -rf "$work"' EXIT

make_hub() {  # $1: directory, $2: the traits argument
  mkdir -p "$1/Sources/Hub"
  cat >"$1/Package.swift" <<EOF
// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "embedding-hub",
    dependencies: [.package(path: "$root"$2)],
    targets: [.executableTarget(name: "Hub", dependencies: [.product(name: "PushNative", package: "$identity")])]
)
EOF
  cat >"$1/Sources/Hub/main.swift" <<'EOF'
import Foundation
import PushNative

// What a hub on SQLite sees when HAPI_PUSH_DATABASE_URL is set in a build without PostgreSQL.
let configuration = try PushConfiguration.load(environment: ProcessInfo.processInfo.environment, dataDirectory: CommandLine.arguments[1], persist: false)
print("includesPostgres=\(PushConfiguration.includesPostgres) registry=\(configuration.registry.name)")
for diagnostic in configuration.diagnostics where diagnostic.setting == "pushDatabaseUrl" { print(diagnostic) }
EOF
}

# The objects the Hub executable links, and its link command, from the planned build.
plan() {  # $1: directory
  (cd "$1" && "$SWIFT" build --print-manifest-job-graph >/dev/null)
  local manifest
  manifest="$(ls "$1"/.build/debug.yaml)"
  grep -A2 'Hub.product/Objects.LinkFileList":' "$manifest" | grep 'inputs:' || { echo "no link list for Hub in $manifest" >&2; exit 1; }
  grep -A6 '"C.Hub-.*-debug.exe":' "$manifest" | grep 'args:' || { echo "no link command for Hub in $manifest" >&2; exit 1; }
}

make_hub "$work/off" ", traits: []"
make_hub "$work/on" ""
off="$(plan "$work/off")"
on="$(plan "$work/on")"

if ! grep -q 'DeviceRegistryPostgres.build/' <<<"$on" || ! grep -q '"-lpq"' <<<"$on"; then
  echo "check-embedding-without-postgres: the control (default traits) links no DeviceRegistryPostgres: the check cannot see it" >&2
  exit 1
fi
if grep -q -e 'DeviceRegistryPostgres.build/' -e '"-lpq"' <<<"$off"; then
  echo "check-embedding-without-postgres: a hub depending on PushNative with traits: [] still links PostgreSQL (libpq):" >&2
  grep -o -e '[^"]*DeviceRegistryPostgres.build/[^"]*' -e '"-lpq"' <<<"$off" | head -5 >&2
  exit 1
fi
echo "check-embedding-without-postgres: a hub on PushNative with traits: [] links no DeviceRegistryPostgres and no libpq (with the default traits it does)"

if [ "${1:-}" = "--build" ]; then
  # pkg-config sees every .pc file but libpq's, so nothing of libpq can be found.
  pcdir="$work/pkgconfig"
  mkdir -p "$pcdir"
  for dir in $(pkg-config --variable pc_path pkg-config | tr ':' ' '); do
    [ -d "$dir" ] || continue
    for pc in "$dir"/*.pc; do
      [ -e "$pc" ] && [ "$(basename "$pc")" != "libpq.pc" ] && ln -sf "$pc" "$pcdir/$(basename "$pc")"
    done
  done
  (cd "$work/off" && PKG_CONFIG_LIBDIR="$pcdir" "$SWIFT" build --product Hub)
  mkdir -p "$work/data"
  HAPI_PUSH_DATABASE_URL='postgresql://hub:secret@db.internal/hapi' "$work/off/.build/debug/Hub" "$work/data"
fi
