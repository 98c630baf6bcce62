#!/bin/sh
# Run from the repository root: sh bench/runs/2026-11-28m-across/across.sh
set -eu
D=bench/runs/2026-11-28m-across
W=$(mktemp -d /var/tmp/fslab-across.XXXXXX)
trap 'rm -rf "$W"' EXIT
F=.venv/bin/fslab
$F run $D/study.toml --results "$W/mon.db" > /dev/null 2> "$W/mon.log"
sleep 60
$F run $D/study.toml --results "$W/tue.db" > /dev/null 2> "$W/tue.log"
echo "## two runs of the study, compared (fslab compare --results tue.db --results mon.db)"
COLUMNS=100 $F compare --results "$W/tue.db" --results "$W/mon.db" 2>&1
$F bundle --results "$W/mon.db" -o "$W/mon.tar.gz" 2> /dev/null
cp "$W/tue.db" "$W/all.db"
echo "## mon's bundle imported beside tue's runs, and fio's own JSON of the same job file"
$F import "$W/mon.tar.gz" --results "$W/all.db" --as mon 2>&1
mkdir "$W/fio"
fio --output-format=json+ --output="$W/fio.json" --directory="$W/fio" $D/oltp-ish.fio > /dev/null
$F import "$W/fio.json" --results "$W/all.db" --into across --target host-ext4-fio \
  --describe fs=ext4 --describe where=/var/tmp --job-file $D/oltp-ish.fio \
  --workload fio-oltp --measure oltp 2>&1
$F import "$W/mon.tar.gz" --results "$W/all.db" --as mon 2>&1
COLUMNS=100 $F compare --results "$W/all.db" 2>&1
