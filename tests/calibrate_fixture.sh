#!/bin/sh
# calibrate_fixture.sh TEMPER FILE: the test run's one calibration of the OpenCL device. Saves its
# ceilings to FILE (temper calibrate --save), which every test that evaluates on PoCL takes through
# TEMPER_CEILINGS instead of measuring the device again in each fresh TEMPER_HOME. Without an
# OpenCL device it saves nothing and passes: those tests skip on their own.
set -u
temper=$1
file=$2
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
rm -f "$file"
if ! TEMPER_HOME=$home "$temper" devices 2>/dev/null | grep -q '^opencl'; then
    echo "no OpenCL device: no ceilings saved"
    exit 0
fi
TEMPER_HOME=$home "$temper" calibrate --device opencl --save "$file" || exit 1
grep -q '"copy_gbs"' "$file" || { echo "FAIL $file has no copy_gbs"; exit 1; }
