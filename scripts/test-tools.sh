#!/usr/bin/env bash
# Install the tools some tests drive, from Debian's packages, when some are missing and this is
# root on a Debian-like system: the container tools the controller image is built and tested with
# (buildah, podman, skopeo, mmdebstrap, runc), the headless browser the HTML report is opened in
# (chromium), and what the real worker nodes run besides the binaries built from source
# (containerd with its ctr and shim, runc, iproute2's ip and tc, iptables, util-linux's nsenter
# and unshare). Otherwise say what the tests will lack. Never fails: `make test` runs it on
# machines of every kind.
set -u
# command:package
tools=(buildah:buildah podman:podman skopeo:skopeo mmdebstrap:mmdebstrap runc:runc chromium:chromium
  containerd:containerd ctr:containerd ip:iproute2 tc:iproute2 iptables:iptables nsenter:util-linux unshare:util-linux
  dpkg-deb:dpkg)
missing=()
for entry in "${tools[@]}"; do
  command -v "${entry%%:*}" >/dev/null 2>&1 && continue
  package="${entry#*:}"
  case " ${missing[*]} " in *" $package "*) ;; *) missing+=("$package") ;; esac
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "test tools missing (${missing[*]}): installing them needs root and apt-get; the tests that use them will skip" >&2
  exit 0
fi
echo "installing ${missing[*]} for the image, browser and real-node tests" >&2
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/dev/null; then
  echo "apt-get could not install ${missing[*]}; the tests that use them will skip (or fail under CI=true)" >&2
fi
exit 0
