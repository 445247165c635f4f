# Sourced by the check scripts (check-vllm, check-vllm-cuda): `status` is the worst exit
# status of the checks so far, which the script exits with.
#
#   . "$root/scripts/exit_status.sh";  opcontract check ...;  keep_worst $?;  exit "$status"
status=0
# An error (2) beats a new finding (1), which beats a pass (0).
keep_worst() { if [ "$1" -eq 2 ] || { [ "$1" -ne 0 ] && [ "$status" -ne 2 ]; }; then status=$1; fi; }
