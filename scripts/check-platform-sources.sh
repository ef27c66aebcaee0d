#!/usr/bin/env bash
# `make test`, first: the sources name the operating system only in the platform layer.
#
# Fails (exit 1, one line per offence) when a Swift file under Sources/ or Tests/
#   - imports Glibc, Musl or Darwin outside an `#if canImport(<that module>)` branch;
#   - qualifies a name with one of those modules (`Glibc.close`): that binds the code to one C
#     library (PushPlatform's `Platform.close`, `.read`, `.write`, … are the portable spelling);
#   - calls the Linux-only shims' helpers (hapi_epoll_*, hapi_eventfd_*, hapi_use_one_malloc_arena)
#     outside an `#if os(Linux)` branch;
#   - has an `#if os(Linux)…` branch holding more than imports without `&& !HAPI_PUSH_PORTABLE`
#     (so the portable build takes the other side) or without an `#else` (the other side: what
#     every other system compiles, and `make test-portable` compiles here). The one exception is
#     a backend file of the platform layer guarded as a whole, whose other side is another file
#     of the layer guarded `#if !os(Linux) || HAPI_PUSH_PORTABLE` (SelectorEpoll.swift and
#     SelectorPoll.swift, as swift-nio keeps one file per selector backend);
# or when code (comments aside) in any Swift or C file there names what only the platform layer
# may name: epoll, eventfd, malloc.h, mallopt, TCP_INFO, TCP_CONNECTION_INFO, SO_NOSIGPIPE,
# MSG_NOSIGNAL, SOCK_CLOEXEC, SOCK_NONBLOCK, pthread_setname_np, pthread_getname_np,
# pthread_getattr_np, getrlimit, setrlimit, outside the files allowed below.
#
# Usage: scripts/check-platform-sources.sh [ROOT]   (ROOT defaults to this checkout; the test
# PlatformSourceCheckTests runs it on a copy with a planted offence to prove it can fail).
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"

# The platform layer: the only places whose code may name the names above. A folder ends in /.
allowed=(
  Sources/PushPlatform/                    # the Swift side: selector backends, sockets, threads, limits, Darwin's calls
  Sources/CHapiPlatform/                   # its C shim for every system (Linux's calls under __linux__, fallbacks else)
  Sources/CHapiEpoll/                      # its Linux-only C shim: epoll, eventfd (imported by SelectorEpoll.swift only)
  Tests/PushPlatformTests/                 # its tests, which name the backend they expect
  # What must stay outside it, and why:
  Sources/CHapiMallocArena/shim.h          # glibc's mallopt for the hapi-push executable only: the library never sets a host's allocator
  Sources/CHapiMicrohttpd/shim.h           # names libmicrohttpd's own epoll mode flag (MHD_USE_EPOLL_...) under #if defined(__linux__): no call of ours
  Sources/CHapiLoopback/hapi_loopback.c    # the loopback HTTP/2 test server (tests and the demo, not a product): its eventfd wake-up
)
platform_names='epoll|eventfd|malloc\.h|mallopt|TCP_INFO|TCP_CONNECTION_INFO|SO_NOSIGPIPE|MSG_NOSIGNAL|SOCK_CLOEXEC|SOCK_NONBLOCK|pthread_[gs]etname_np|pthread_getattr_np|[gs]etrlimit'

status=0
for file in "${allowed[@]}"; do
  [[ -e "$file" ]] || { echo "check-platform-sources: allow-listed $file does not exist (update the list)"; status=1; }
done

is_allowed() {
  local file
  for file in "${allowed[@]}"; do
    if [[ "$file" == */ ]]; then [[ "$1" == "$file"* ]] && return 0; else [[ "$1" == "$file" ]] && return 0; fi
  done
  return 1
}

# The platform layer's portable backend files: their opening guard is the complement of the
# Linux backend's, so a Linux backend file there needs no #else of its own.
portable_backends=()
while IFS= read -r -d '' file; do
  first="$(grep -m1 -E '^[[:space:]]*#if' "$file" || true)"
  [[ "$first" =~ ^[[:space:]]*#if[[:space:]]+!os\(Linux\)[[:space:]]*\|\|[[:space:]]*HAPI_PUSH_PORTABLE[[:space:]]*$ ]] && portable_backends+=("$file")
done < <(find Sources/PushPlatform -name '*.swift' -print0 2>/dev/null | sort -z)

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
    if hits="$(code_lines "$file" | grep -E "$platform_names" -i)"; then
      while IFS= read -r hit; do echo "check-platform-sources: platform name outside the platform layer: $hit"; done <<<"$hits"
      status=1
    fi
    if [[ "$file" == *.swift ]] && hits="$(code_lines "$file" | grep -E '(^|[^A-Za-z0-9_.])(Glibc|Musl|Darwin)\.[A-Za-z_]')"; then
      while IFS= read -r hit; do echo "check-platform-sources: a name qualified with one C library outside the platform layer: $hit"; done <<<"$hits"
      status=1
    fi
  fi
  [[ "$file" == *.swift ]] || continue
  # A Linux backend file of the platform layer may leave its #else to a portable backend file.
  backend_ok=0
  if [[ "$file" == Sources/PushPlatform/* ]]; then
    for other in "${portable_backends[@]}"; do [[ "$other" != "$file" ]] && backend_ok=1; done
  fi
  # Conditional-compilation stack: each entry is the condition of the branch we are in.
  if ! awk -v file="$file" -v backend_ok="$backend_ok" '
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
          if (!linux_else[depth] && !(backend_ok && depth == 1)) {
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
  echo "check-platform-sources: failed (see scripts/check-platform-sources.sh for the rules and the platform layer's allow-list)" >&2
fi
exit $status
