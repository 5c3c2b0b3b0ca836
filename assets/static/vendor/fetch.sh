#!/usr/bin/env bash
# Re-fetch the vendored JavaScript from the npm registry and install it here only if every file matches
# SHA256SUMS. The app and the tests never run this: the committed files are what the bertviz views inline
# (inspector/bertviz_views.py). Run it to prove the committed files are the published ones, or — after
# changing a version below and its line in SHA256SUMS and VENDOR.md on purpose — to upgrade one.
#
#   assets/static/vendor/fetch.sh           fetch, verify, install
#   assets/static/vendor/fetch.sh --check   fetch and verify only; leave the committed files alone
set -euo pipefail

D3=5.7.0         # the d3 bertviz 1.4.1's head_view.js / model_view.js ask cdnjs for
JQUERY=3.7.1     # bertviz asks for 2.0.0, which npm never published; see VENDOR.md
REQUIREJS=2.3.7  # bertviz asks for 2.3.6; 2.3.7 is 2.3.6 plus the CVE-2024-38999 fix only

here="$(cd "$(dirname "$0")" && pwd)"
check_only=0
[ "${1:-}" = "--check" ] && check_only=1

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
# npm pack checks each tarball against the registry's integrity hash before writing it.
npm pack --silent "d3@$D3" "jquery@$JQUERY" "requirejs@$REQUIREJS" >/dev/null
for tarball in *.tgz; do
  mkdir "${tarball%.tgz}"
  tar xzf "$tarball" -C "${tarball%.tgz}"
done

mkdir staged
cp "d3-$D3/package/dist/d3.min.js" "staged/d3-$D3.min.js"
cp "d3-$D3/package/LICENSE" staged/LICENSE-d3.txt
cp "jquery-$JQUERY/package/dist/jquery.min.js" "staged/jquery-$JQUERY.min.js"
cp "jquery-$JQUERY/package/LICENSE.txt" staged/LICENSE-jquery.txt
# The requirejs package publishes no minified build; the readable require.js is the one it ships.
cp "requirejs-$REQUIREJS/package/require.js" "staged/require-$REQUIREJS.js"
# It ships no LICENSE file either, so LICENSE-requirejs.txt is committed by hand and not fetched.
cp "$here/LICENSE-requirejs.txt" staged/

cd staged
if ! sha256sum --quiet -c "$here/SHA256SUMS"; then
  echo "fetch.sh: the published files do not match SHA256SUMS; nothing installed. Their sums:" >&2
  sha256sum -- * >&2
  exit 1
fi
if [ "$check_only" = 1 ]; then
  echo "fetch.sh: the committed files match the npm registry's d3@$D3, jquery@$JQUERY, requirejs@$REQUIREJS"
  exit 0
fi
cp -- * "$here/"
echo "fetch.sh: installed d3@$D3, jquery@$JQUERY, requirejs@$REQUIREJS into $here"
