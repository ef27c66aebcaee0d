#!/usr/bin/env bash
# make deploy-check: deploy/Dockerfile's two stages, run without a container engine.
#
# Each stage runs in a Debian bookworm root made by debootstrap (--variant=minbase, the
# equivalent of debian:bookworm-slim): its RUN lines exactly as written (so exactly its package
# lists), its COPY, WORKDIR, ENV and USER. The build stage's base image, swift:6.3-bookworm, is
# stood in for by the packages swift-docker's debian/12 image installs plus this machine's
# toolchain (bound at /opt/swift). The runtime root then starts the relay as the Dockerfile's
# user, runs the HEALTHCHECK command, and stops it with the STOPSIGNAL. Any missing library
# (the build fails, or the binary cannot load) fails the target.
#
# Needs root (chroot, mounts) and debootstrap. DEPLOY_DOCKERFILE picks another Dockerfile (to
# see it fail); DEPLOY_REUSE_BUILD=1 keeps the previous run's build root (to try a runtime stage
# without the release build); DEPLOY_CACHE is where the roots live (/var/cache/hapi-deploy).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DOCKERFILE=${DEPLOY_DOCKERFILE:-$ROOT/deploy/Dockerfile}
CACHE=${DEPLOY_CACHE:-/var/cache/hapi-deploy}
MIRROR=${DEPLOY_MIRROR:-http://deb.debian.org/debian}
SWIFT_BIN=$(dirname "$(command -v swift)")
TOOLCHAIN=$(cd "$SWIFT_BIN/../.." && pwd)   # /opt/swift for /opt/swift/usr/bin/swift
# swift-docker's 6.x debian/12 Dockerfile (the swift:*-bookworm images): what the toolchain needs.
SWIFT_IMAGE_PACKAGES="binutils libicu-dev libcurl4-openssl-dev libedit-dev libsqlite3-dev libncurses-dev libpython3-dev libxml2-dev pkg-config uuid-dev tzdata git gcc libstdc++-12-dev"

say() { printf '== deploy-check: %s\n' "$*"; }
die() { printf 'deploy-check FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (chroot and mounts)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"

MOUNTS=()
cleanup() {
    local i
    for ((i=${#MOUNTS[@]}-1; i>=0; i--)); do umount -l "${MOUNTS[$i]}" 2>/dev/null || true; done
    [ -n "${RELAY_PID:-}" ] && kill "$RELAY_PID" 2>/dev/null || true
}
trap cleanup EXIT

bind() { mkdir -p "$2"; mount --bind "$1" "$2"; MOUNTS+=("$2"); }

# A fresh root for a stage: a copy of the debootstrap base (made once), with /proc, /dev and DNS.
fresh_root() {
    local dir=$1
    if [ ! -x "$CACHE/base/bin/sh" ]; then
        say "debootstrap bookworm (minbase) into $CACHE/base (once)"
        mkdir -p "$CACHE"
        rm -rf "$CACHE/base.partial"
        debootstrap --variant=minbase bookworm "$CACHE/base.partial" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
            || die "debootstrap failed (see $CACHE/debootstrap.log)"
        mv "$CACHE/base.partial" "$CACHE/base"
    fi
    rm -rf "$dir"
    cp -a "$CACHE/base" "$dir"
    cp /etc/resolv.conf "$dir/etc/resolv.conf"
    mkdir -p "$dir/proc"
    mount -t proc proc "$dir/proc"; MOUNTS+=("$dir/proc")
    bind /dev "$dir/dev"
}

# The Dockerfile with continuation lines joined, comments dropped: one instruction a line.
instructions() { sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' "$DOCKERFILE" | grep -v '^[[:space:]]*#' | grep -v '^[[:space:]]*$'; }

# Runs stage number $1 (1 = build, 2 = runtime) in root $2.
run_stage() {
    local stage=$1 dir=$2 n=0 workdir=/ user=0:0 line keyword rest
    local -a env=(PATH=/opt/swift/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive)
    while IFS= read -r line; do
        keyword=${line%% *}
        rest=${line#* }
        if [ "$keyword" = FROM ]; then n=$((n+1)); continue; fi
        [ "$n" = "$stage" ] || continue
        case "$keyword" in
        RUN)
            say "stage $stage: RUN ${rest:0:110}…"
            chroot --userspec="$user" "$dir" /usr/bin/env -i "${env[@]}" /bin/sh -c "cd $workdir && $rest" \
                || die "stage $stage: RUN failed: ${rest:0:200}"
            ;;
        WORKDIR) workdir=$rest; mkdir -p "$dir$workdir" ;;
        ENV) env+=("$rest") ;;
        USER) user=$rest ;;
        COPY)
            if [[ $rest == --from=* ]]; then
                set -- $rest
                say "stage $stage: COPY $*"
                mkdir -p "$dir$(dirname "$3")"
                cp -a "$BUILD_ROOT$2" "$dir$3"
            else
                set -- $rest
                say "stage $stage: COPY $*"
                local target=$2
                [[ $target == /* ]] || target=$workdir/$target
                if [ -d "$ROOT/$1" ]; then
                    mkdir -p "$dir$target"
                    cp -a "$ROOT/$1/." "$dir$target/"
                elif [[ $target == */ ]]; then
                    mkdir -p "$dir$target"
                    cp -a "$ROOT/$1" "$dir$target"
                else
                    mkdir -p "$(dirname "$dir$target")"
                    cp -a "$ROOT/$1" "$dir$target"
                fi
            fi
            ;;
        *) ;;
        esac
    done < <(instructions)
    STAGE_ENV=("${env[@]}")
    STAGE_USER=$user
}

BUILD_ROOT=$CACHE/build-root
RUNTIME_ROOT=$CACHE/runtime-root

if [ "${DEPLOY_REUSE_BUILD:-0}" = 1 ] && [ -x "$BUILD_ROOT/usr/local/bin/hapi-push-relay" ]; then
    # Only to try another runtime stage quickly: the build root of the previous run is kept.
    say "DEPLOY_REUSE_BUILD=1: the build stage's binary from the previous run"
else
    say "build stage root $BUILD_ROOT"
    fresh_root "$BUILD_ROOT"
    say "stand-in for the swift image: $SWIFT_IMAGE_PACKAGES; toolchain $TOOLCHAIN"
    chroot "$BUILD_ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive /bin/sh -c \
        "apt-get -q update >/dev/null && apt-get -q install -y $SWIFT_IMAGE_PACKAGES >/dev/null && rm -rf /var/lib/apt/lists/*" \
        || die "could not install the swift image's packages"
    bind "$TOOLCHAIN/usr" "$BUILD_ROOT/opt/swift/usr"
    run_stage 1 "$BUILD_ROOT"
fi
[ -x "$BUILD_ROOT/usr/local/bin/hapi-push-relay" ] || die "the build stage made no /usr/local/bin/hapi-push-relay"

say "runtime stage root $RUNTIME_ROOT"
fresh_root "$RUNTIME_ROOT"
run_stage 2 "$RUNTIME_ROOT"
RELAY=/usr/local/bin/hapi-push-relay
[ -x "$RUNTIME_ROOT$RELAY" ] || die "the runtime stage has no $RELAY"
missing=$(chroot "$RUNTIME_ROOT" ldd "$RELAY" | grep 'not found' || true)
[ -z "$missing" ] || die "libraries missing in the runtime image: $missing"
chroot --userspec="$STAGE_USER" "$RUNTIME_ROOT" "$RELAY" --version || die "the relay does not run in the runtime image"

# Start it as the image would (its user, its ENV), with an APNs key made here.
PORT=$((20000 + RANDOM % 20000))
mkdir -p "$RUNTIME_ROOT/etc/hapi-push-relay"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$RUNTIME_ROOT/etc/hapi-push-relay/apns.p8" 2>/dev/null
chown -R "${STAGE_USER%%:*}" "$RUNTIME_ROOT/etc/hapi-push-relay"
LOG=$CACHE/runtime-relay.log
chroot --userspec="$STAGE_USER" "$RUNTIME_ROOT" /usr/bin/env -i "${STAGE_ENV[@]}" RELAY_PORT=$PORT RELAY_HOST=127.0.0.1 \
    RELAY_APNS_KEY_P8_PATH=/etc/hapi-push-relay/apns.p8 RELAY_APNS_KEY_ID=DEPLOYCHK1 RELAY_APNS_TEAM_ID=DEPLOYCHK1 \
    RELAY_APNS_BUNDLE_ID=run.hapi.app "$RELAY" >"$LOG" 2>&1 &
RELAY_PID=$!
for _ in $(seq 1 100); do grep -q "listening on" "$LOG" && break; sleep 0.1; done
grep -q "listening on" "$LOG" || die "the relay did not start: $(cat "$LOG")"
# The image's HEALTHCHECK command, in the image.
healthcheck=$(instructions | awk '/^HEALTHCHECK/' | sed -e 's/.*CMD \["\/bin\/sh", "-c", "//' -e 's/"\]$//')
say "HEALTHCHECK: $healthcheck"
chroot --userspec="$STAGE_USER" "$RUNTIME_ROOT" /usr/bin/env -i "${STAGE_ENV[@]}" RELAY_PORT=$PORT /bin/sh -c "$healthcheck" \
    || die "the HEALTHCHECK failed: $(cat "$LOG")"
kill -TERM "$RELAY_PID"
status=0; wait "$RELAY_PID" || status=$?
RELAY_PID=
[ "$status" = 0 ] || die "the relay exited $status on SIGTERM: $(cat "$LOG")"
cat "$LOG"
say "OK: built with the build stage's packages, ran with the runtime stage's ($(du -h "$BUILD_ROOT/usr/local/bin/hapi-push-relay" | cut -f1) binary)"
