# Checker sources linked into libncclguard.so (appended before interpose.mk builds it).
SHIM_SRCS += interpose/checker.c
