#!/bin/sh
# Stages in a shell handler: `shell:sh ship.sh {name}`.
# A stage report is one line appended to the file $TASKYARD_STAGES:
#   begin NAME | end NAME [RESULT] | fail NAME [MESSAGE]
# $TASKYARD_STAGES_DONE names the stages earlier attempts finished (space-separated);
# $TASKYARD_STAGE_RESULTS is a file holding their results as one JSON object.
# `upload` fails on the first attempt on purpose, so one run shows the resume.
set -e
name=$1

finished() {
    case " $TASKYARD_STAGES_DONE " in *" $1 "*) return 0 ;; *) return 1 ;; esac
}

if finished build; then
    echo "build: finished by an earlier attempt, skipped"
else
    echo "begin build" >> "$TASKYARD_STAGES"
    echo "build: packing $name"
    echo "end build {\"artifact\": \"$name.tar.gz\"}" >> "$TASKYARD_STAGES"
fi

echo "begin upload" >> "$TASKYARD_STAGES"
if [ "$TASKYARD_ATTEMPT" = 1 ]; then
    echo "fail upload network down" >> "$TASKYARD_STAGES"
    echo "upload: network down (attempt 1 fails on purpose)" >&2
    exit 3
fi
echo "upload: sending $name.tar.gz"
echo "end upload \"sent\"" >> "$TASKYARD_STAGES"

# The result: what the earlier attempts' stages left, as JSON.
printf '{"shipped": "%s", "earlier_stages": %s}\n' "$name" \
    "$(cat "$TASKYARD_STAGE_RESULTS")" > "$TASKYARD_RESULT"
