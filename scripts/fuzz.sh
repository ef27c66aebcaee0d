#!/usr/bin/env bash
# Builds the libFuzzer harnesses in Tests/Fuzz (-sanitize=fuzzer,address) and runs each one for
# FUZZ_SECONDS (default 150) on a scratch copy of its seed corpus Tests/Fuzz/corpus/<target>.
#
#   FUZZ_SECONDS=60 scripts/fuzz.sh            # 60 s per target
#   FUZZ_TARGETS="json classify" scripts/fuzz.sh
#   FUZZ_SAVE_CORPUS=1 scripts/fuzz.sh         # merge inputs that add coverage into the seeds
#   FUZZ_RUNS=10000000 FUZZ_SECONDS=86400 scripts/fuzz.sh   # a campaign: stop each target after 10 million executions
#   FUZZ_WORK_ROOT=/dev/shm scripts/fuzz.sh  # scratch corpus and settings files on tmpfs (the settings target saves files: 30x faster)
#
# Crashing inputs go to Tests/Fuzz/artifacts/<target>/ (gitignored). Exits 1 if any target
# crashed: turn each crash into a case in Tests/*/FuzzRegressionTests.swift.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-150}
TARGETS=${FUZZ_TARGETS:-registration envelope settings json classify url credentials sanitize subscription endpoint vapid webpush}
BUILD_DIR=${FUZZ_BUILD_DIR:-/tmp/hapi-push-fuzz-build}
MAX_LEN=${FUZZ_MAX_LEN:-8192}
[[ "$SECONDS_PER_TARGET" =~ ^[1-9][0-9]*$ ]] || { echo "error: FUZZ_SECONDS must be a positive integer" >&2; exit 2; }
RUNS=${FUZZ_RUNS:-}
[[ -z "$RUNS" || "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "error: FUZZ_RUNS must be a positive integer" >&2; exit 2; }

binary_name() {
  case "$1" in
    registration) echo FuzzRegistration ;;
    envelope) echo FuzzEnvelope ;;
    settings) echo FuzzSettings ;;
    json) echo FuzzJSON ;;
    classify) echo FuzzClassify ;;
    url) echo FuzzURL ;;
    credentials) echo FuzzCredentials ;;
    sanitize) echo FuzzSanitize ;;
    subscription) echo FuzzSubscription ;;
    endpoint) echo FuzzEndpoint ;;
    vapid) echo FuzzVAPIDKeys ;;
    webpush) echo FuzzWebPushAnswer ;;
    *) echo "error: unknown fuzz target '$1' (registration envelope settings json classify url credentials sanitize subscription endpoint vapid webpush)" >&2; exit 2 ;;
  esac
}
for target in $TARGETS; do binary_name "$target" >/dev/null; done

echo "building fuzz targets in $BUILD_DIR"
# The harnesses are targets of the main package, declared only when HAPI_PUSH_FUZZ=1 (so they can
# use its `package` machinery); each is built as its own product, never the CLI or the tests
# (their `main` would clash with libFuzzer's).
# `--sanitize=fuzzer` makes SwiftPM leave `main` to libFuzzer, but SwiftPM passes each sanitizer
# as its own `-sanitize=` and swiftc keeps only the last one: the combined -Xswiftc flag comes
# after them and instruments for both coverage and ASan. gold's warning about an ASan-internal
# symbol (once per binary) is noise.
export HAPI_PUSH_FUZZ=1
for target in $TARGETS; do
  "$SWIFT" build -c release --scratch-path "$BUILD_DIR" ${FUZZ_JOBS:+-j "$FUZZ_JOBS"} --product "$(binary_name "$target")" \
    --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address 2>&1 |
    { grep -v -e "__asan_extra_spill_area" -e '^\[' || true; }
done
BIN=$("$SWIFT" build -c release --scratch-path "$BUILD_DIR" --show-bin-path)

# The Swift backtracer is very slow under ASan; libFuzzer prints the stack itself. Leak checks are
# off: LSan misreads Swift references packed into enum spare bits and Foundation's buffers as leaks.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}

WORK=$(mktemp -d "${FUZZ_WORK_ROOT:-/tmp}/hapi-push-fuzz.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
summary=()
failed=0
for target in $TARGETS; do
  binary="$BIN/$(binary_name "$target")"
  seeds="Tests/Fuzz/corpus/$target"
  corpus="$WORK/$target"
  artifacts="Tests/Fuzz/artifacts/$target"
  log="$WORK/$target.log"
  mkdir -p "$corpus" "$artifacts"
  cp "$seeds"/* "$corpus"/
  before=$(find "$artifacts" -type f | wc -l)
  echo "fuzzing $target for ${SECONDS_PER_TARGET}s"
  status=0
  # TMPDIR: the settings harness keeps its scratch settings.json there, removed with $WORK.
  TMPDIR="$WORK" "$binary" "$corpus" -max_total_time="$SECONDS_PER_TARGET" ${RUNS:+-runs="$RUNS"} -max_len="$MAX_LEN" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -detect_leaks=0 -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
  crashes=$(( $(find "$artifacts" -type f | wc -l) - before ))
  if [ "$status" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    failed=1
    grep -E -m 5 -e "fuzz property violated" -e "ERROR: (libFuzzer|AddressSanitizer)" -e "Fatal error" "$log" >&2 || true
    grep -E -e "Test unit written to" "$log" >&2 || true
    cp "$log" "$artifacts/last-run.log"
    [ "$crashes" -gt 0 ] || crashes=1
  fi
  final_stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  summary+=("$(printf '%-13s %12s %10s %8s %8s' "$target" "$(final_stat number_of_executed_units)" \
    "$(final_stat average_exec_per_sec)" "$(find "$corpus" -type f | wc -l)" "$crashes")")
  if [ "${FUZZ_SAVE_CORPUS:-0}" = 1 ]; then
    "$binary" -merge=1 -max_len="$MAX_LEN" -detect_leaks=0 "$seeds" "$corpus" >>"$log" 2>&1 || true
  fi
done

printf '\n%-13s %12s %10s %8s %8s\n' target executions execs/s corpus crashes
printf '%s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
  echo "fuzzing found crashes: inputs and logs are in Tests/Fuzz/artifacts/" >&2
  exit 1
fi
