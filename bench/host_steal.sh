# Sourced by the benchmarks: the CPU time the hypervisor gave to other guests
# while a benchmark ran ("steal" in /proc/stat), so that a figure measured on
# a busy host is marked as such.
#   steal_mark          remembers /proc/stat's counters now
#   steal_report NAME   prints the steal since the mark as a share of all CPU time,
#                       with "BUSY HOST" past 2 %
steal_counters() { awk '/^cpu / {total = 0; for (i = 2; i <= NF; i++) total += $i; print $9, total}' /proc/stat; }
steal_mark() { read -r STEAL_AT_MARK TOTAL_AT_MARK < <(steal_counters); }
steal_report() {
  local steal total
  read -r steal total < <(steal_counters)
  awk -v name="$1" -v s=$((steal - STEAL_AT_MARK)) -v t=$((total - TOTAL_AT_MARK)) 'BEGIN {
    share = t > 0 ? 100 * s / t : 0
    verdict = (share > 2) ? " -- BUSY HOST: these figures are not an idle machine'"'"'s" : " (idle host)"
    printf "== host steal during %s: %.1f %% of CPU time%s\n", name, share, verdict
  }'
}
