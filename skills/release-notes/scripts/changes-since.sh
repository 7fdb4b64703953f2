#!/bin/sh
# changes-since.sh - list commits since the last tag, grouped by conventional-commit type.
#
# Usage: changes-since.sh [FROM] [TO]
#   FROM  tag or commit to start after (default: the latest tag reachable from TO;
#         if the repository has no tags, the whole history)
#   TO    end of the range (default: HEAD)
#
# Output is Markdown: a heading per type (Breaking changes first), one bullet per
# commit with its scope, description and short hash. Merge commits are skipped.
# Commits whose subject is not "type(scope)!: description" are listed under "Other".
set -eu

case "${1:-}" in
  -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac

git rev-parse --git-dir >/dev/null 2>&1 || { echo "changes-since: not a git repository" >&2; exit 2; }

to=${2:-HEAD}
if [ -n "${1:-}" ]; then
  from=$1
else
  from=$(git describe --tags --abbrev=0 "$to" 2>/dev/null || true)
fi

for ref in "$to" ${from:+"$from"}; do
  git rev-parse --verify --quiet "$ref^{commit}" >/dev/null ||
    { echo "changes-since: unknown revision '$ref'" >&2; exit 2; }
done

if [ -n "$from" ]; then
  range="$from..$to"
  label="since $from"
else
  range="$to"
  label="in the whole history (no tag found)"
fi

git log --no-merges --format='%x1e%h%x1f%s%x1f%b' "$range" | awk -v label="$label" '
BEGIN {
  RS = "\036"; FS = "\037"
  norder = split("breaking feat fix perf refactor docs test build ci chore style revert other", order, " ")
  title["breaking"] = "Breaking changes"; title["feat"] = "Features"
  title["fix"] = "Bug fixes";             title["perf"] = "Performance"
  title["refactor"] = "Refactoring";      title["docs"] = "Documentation"
  title["test"] = "Tests";                title["build"] = "Build"
  title["ci"] = "Continuous integration"; title["chore"] = "Chores"
  title["style"] = "Style";               title["revert"] = "Reverts"
  title["other"] = "Other"
  total = 0
}
NF >= 2 {
  hash = $1; subject = $2; body = $3
  type = "other"; scope = ""; desc = subject; breaking = 0
  if (match(subject, /^[A-Za-z]+(\([^)]*\))?!?: /)) {
    prefix = substr(subject, 1, RLENGTH - 2)
    desc = substr(subject, RLENGTH + 1)
    if (prefix ~ /!$/) { breaking = 1; prefix = substr(prefix, 1, length(prefix) - 1) }
    p = index(prefix, "(")
    if (p > 0) { scope = substr(prefix, p + 1, length(prefix) - p - 1); prefix = substr(prefix, 1, p - 1) }
    type = tolower(prefix)
    if (!(type in title) || type == "breaking" || type == "other") { type = "other"; desc = subject; scope = "" }
  }
  if (body ~ /(^|\n)BREAKING[ -]CHANGE: /) breaking = 1
  line = "- " (scope != "" ? "**" scope ":** " : "") desc " (" hash ")"
  items[type] = items[type] line "\n"; count[type]++
  if (breaking) { items["breaking"] = items["breaking"] line "\n"; count["breaking"]++ }
  total++
}
END {
  if (total == 0) { print "No changes " label "."; exit 0 }
  printf "# Changes %s (%d commit%s)\n", label, total, (total == 1 ? "" : "s")
  for (i = 1; i <= norder; i++) {
    t = order[i]
    if (count[t] > 0) printf "\n## %s\n\n%s", title[t], items[t]
  }
}'
