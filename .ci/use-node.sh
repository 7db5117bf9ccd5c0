# Sourced by .ci/run: puts Node.js $CI_NODE_MAJOR (default 22, the floor in package.json `engines`) first on PATH for
# this shell only, whatever `node` the machine has. The binary comes from the npm registry's `node-<os>-<arch>`
# package (the official build, no install scripts), unpacked into .ci/node<major>/ (git-ignored); nothing global
# changes and nothing is fetched from outside the npm registry. The system npm then runs on that Node.
# Set CI_NODE_MAJOR=24 to test on the other supported major.

CI_NODE_MAJOR="${CI_NODE_MAJOR:-22}"
ci_node_dir="$PWD/.ci/node${CI_NODE_MAJOR}"
ci_node_package="node-$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m | sed -e 's/^x86_64$/x64/' -e 's/^aarch64$/arm64/')"

# The newest release of that major on the registry; offline, whatever is already unpacked.
ci_node_wanted="$(npm view --silent --json "${ci_node_package}@${CI_NODE_MAJOR}" version 2>/dev/null | node -e '
  const versions = [JSON.parse(require("fs").readFileSync(0, "utf8"))].flat();
  const key = (v) => v.split(".").map(Number);
  versions.sort((a, b) => { const [x, y] = [key(a), key(b)]; return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; });
  process.stdout.write(versions.at(-1) ?? "");' 2>/dev/null || true)"
ci_node_have="$("$ci_node_dir/bin/node" --version 2>/dev/null || true)"
if [[ -n "$ci_node_wanted" && "$ci_node_have" != "v$ci_node_wanted" ]]; then
  echo "Installing ${ci_node_package}@${ci_node_wanted} from the npm registry into ${ci_node_dir}"
  rm -rf "$ci_node_dir"
  mkdir -p "$ci_node_dir"
  ci_node_tarball="$(cd "$ci_node_dir" && npm pack --silent "${ci_node_package}@${ci_node_wanted}")"
  tar -xzf "$ci_node_dir/$ci_node_tarball" -C "$ci_node_dir" --strip-components=1
  rm -f "$ci_node_dir/$ci_node_tarball"
elif [[ -z "$ci_node_have" ]]; then
  echo "Cannot test on Node ${CI_NODE_MAJOR}: ${ci_node_package}@${CI_NODE_MAJOR} is not on the npm registry (or the registry is unreachable) and ${ci_node_dir} holds no Node." >&2
  exit 1
fi

export PATH="$ci_node_dir/bin:$PATH"
hash -r
if [[ "$(node --version)" != "v${CI_NODE_MAJOR}."* ]]; then
  echo "Expected Node ${CI_NODE_MAJOR} first on PATH, found $(command -v node) $(node --version)." >&2
  exit 1
fi
echo "Testing on Node $(node --version) ($(command -v node)), npm $(npm --version)"
