#!/usr/bin/env bash
# Makes sure Debian's chromium is at /usr/bin/chromium: the dashboard's browser test
# (test/e2e/dashboard.test.ts) drives it with playwright-core.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
echo "/usr/bin/chromium missing: installing Debian's chromium" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
