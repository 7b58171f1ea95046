#!/usr/bin/env bash
# Install the tools some tests drive, from Debian's packages, when some are missing and this is
# root on a Debian-like system: the container tools the controller image is built and tested with
# (buildah, podman, skopeo, mmdebstrap, runc) and the headless browser the HTML report is opened
# in (chromium). Otherwise say what the tests will lack. Never fails: `make test` runs it on
# machines of every kind.
set -u
tools=(buildah podman skopeo mmdebstrap runc chromium)
missing=()
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "test tools missing (${missing[*]}): installing them needs root and apt-get; the tests that use them will skip" >&2
  exit 0
fi
echo "installing ${missing[*]} for the image and browser tests" >&2
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/dev/null; then
  echo "apt-get could not install ${missing[*]}; the tests that use them will skip (or fail under CI=true)" >&2
fi
exit 0
