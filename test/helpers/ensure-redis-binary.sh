#!/usr/bin/env bash
# Makes sure redis-server and redis-cli exist: the tests start their own servers with them.
# On a fresh Debian machine they come from the redis-server and redis-tools packages.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then exit 0; fi
echo "redis-server/redis-cli missing: installing Debian's redis-server and redis-tools" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server redis-tools >/dev/null
