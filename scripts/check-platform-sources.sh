#!/usr/bin/env bash
# `make test`, first: the sources name the operating system only where they are allowed to.
#
# Fails (exit 1, one line per offence) when a Swift file under Sources/ or Tests/
#   - imports Glibc, Musl or Darwin outside an `#if canImport(<that module>)` branch;
#   - calls the Linux shim's epoll/eventfd/malloc-arena helpers (hapi_epoll_*, hapi_eventfd_*,
#     hapi_use_one_malloc_arena) outside an `#if os(Linux)` branch;
#   - has an `#if os(Linux)…` branch holding more than imports without `&& !HAPI_PUSH_PORTABLE`
#     (so the portable build takes the other side) or without an `#else` (the other side: what
#     every other system compiles, and `make test-portable` compiles here);
# or when code (comments aside) in any Swift or C file there names epoll, eventfd, malloc.h or
# mallopt outside the Linux-backend files allowed below.
#
# Usage: scripts/check-platform-sources.sh [ROOT]   (ROOT defaults to this checkout; the test
# PlatformSourceCheckTests runs it on a copy with a planted offence to prove it can fail).
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"

# The Linux backend: the only files whose code may name epoll, eventfd, malloc.h or mallopt.
# Each Swift one calls the helpers only inside `#if os(Linux)`.
allowed=(
  Sources/CHapiLinux/shim.h                # the C shim: epoll, eventfd, mallopt behind plain values
  Sources/CHapiLoopback/hapi_loopback.c    # the loopback HTTP/2 test server's eventfd wake-up (tests and demo only)
  Sources/CHapiMicrohttpd/shim.h           # the relay's libmicrohttpd in its epoll mode, under #if defined(__linux__)
  Sources/PushHTTP/H2Poller.swift          # the HTTP/2 engine's poller and wake-up: epoll and eventfd, or poll(2) and a pipe
  Sources/hapi-push-bench/RelayLoad.swift  # `make bench relayload`'s client loop
)

status=0
for file in "${allowed[@]}"; do
  [[ -f "$file" ]] || { echo "check-platform-sources: allow-listed $file does not exist (update the list)"; status=1; }
done

is_allowed() {
  local file
  for file in "${allowed[@]}"; do [[ "$1" == "$file" ]] && return 0; done
  return 1
}

# Code lines only: comment lines dropped, trailing `//` and one-line `/* */` comments cut.
code_lines() {
  awk '{
    line = $0
    sub(/^[ \t]+/, "", line)
    if (line ~ /^(\/\/|\/\*|\*)/) next
    sub(/[ \t]\/\/.*$/, "", line)
    gsub(/\/\*[^*]*\*\//, "", line)
    print FILENAME ":" FNR ": " line
  }' "$1"
}

while IFS= read -r -d '' file; do
  file="${file#./}"
  if ! is_allowed "$file"; then
    if hits="$(code_lines "$file" | grep -E 'epoll|eventfd|malloc\.h|mallopt' -i)"; then
      while IFS= read -r hit; do echo "check-platform-sources: Linux-only name outside the Linux backend: $hit"; done <<<"$hits"
      status=1
    fi
  fi
  [[ "$file" == *.swift ]] || continue
  # Conditional-compilation stack: each entry is the condition of the branch we are in.
  if ! awk -v file="$file" '
    function linux_active(   i) {
      for (i = 1; i <= depth; i++) if (cond[i] ~ /(^|[^!])os\(Linux\)/) return 1
      return 0
    }
    {
      line = $0
      sub(/^[ \t]+/, "", line)
      if (line ~ /^(\/\/|\/\*|\*)/) next
      sub(/[ \t]\/\/.*$/, "", line)
      if (line ~ /^#if[ \t(!]/) {
        cond[++depth] = substr(line, 4)
        # A Linux-only branch: its `#if` line, whether it has code beyond imports, an #else.
        linux_if[depth] = (cond[depth] ~ /(^|[^!])os\(Linux\)/) ? FNR : 0
        linux_code[depth] = 0
        linux_else[depth] = 0
        linux_cond[depth] = cond[depth]
        next
      }
      if (line ~ /^#elseif[ \t(!]/) { cond[depth] = substr(line, 8); linux_else[depth] = 1; next }
      if (line ~ /^#else/) {
        cond[depth] = (cond[depth] ~ /^[ \t]*!os\(Linux\)[ \t]*$/) ? "os(Linux)" : "#else"
        linux_else[depth] = 1
        next
      }
      if (line ~ /^#endif/) {
        if (linux_if[depth] && linux_code[depth]) {
          if (linux_cond[depth] !~ /!HAPI_PUSH_PORTABLE/) {
            printf "check-platform-sources: %s:%d: #if os(Linux) without && !HAPI_PUSH_PORTABLE (the portable build must take the other side)\n", file, linux_if[depth]
            bad = 1
          }
          if (!linux_else[depth]) {
            printf "check-platform-sources: %s:%d: #if os(Linux) without a portable #else\n", file, linux_if[depth]
            bad = 1
          }
        }
        depth--
        next
      }
      if (depth > 0 && linux_if[depth] && !linux_else[depth] && line != "" && line !~ /^(@[A-Za-z_]+[ \t]+)*((public|package|internal|fileprivate|private)[ \t]+)?import[ \t]/) linux_code[depth] = 1
      if (match(line, /^(@[A-Za-z_]+[ \t]+)*((public|package|internal|fileprivate|private)[ \t]+)?import[ \t]+(Glibc|Musl|Darwin)([ \t]|$)/)) {
        module = line
        sub(/^.*import[ \t]+/, "", module)
        sub(/[ \t].*$/, "", module)
        if (depth == 0 || index(cond[depth], "canImport(" module ")") == 0 || cond[depth] ~ ("!canImport\\(" module "\\)")) {
          printf "check-platform-sources: %s:%d: import %s outside #if canImport(%s)\n", file, FNR, module, module
          bad = 1
        }
      }
      if (line ~ /hapi_epoll_|hapi_eventfd_|hapi_use_one_malloc_arena/ && !linux_active()) {
        printf "check-platform-sources: %s:%d: Linux-only call outside #if os(Linux): %s\n", file, FNR, line
        bad = 1
      }
    }
    END { exit bad }' "$file"; then
    status=1
  fi
done < <(find Sources Tests -type f \( -name '*.swift' -o -name '*.h' -o -name '*.c' -o -name '*.modulemap' \) -print0 | sort -z)

if [[ $status -ne 0 ]]; then
  echo "check-platform-sources: failed (see scripts/check-platform-sources.sh for the rules and the Linux-backend allow-list)" >&2
fi
exit $status
