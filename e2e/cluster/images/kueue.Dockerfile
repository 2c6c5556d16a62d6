# Kueue's manager built from the Go module proxy by build-components (static
# binary). The chart runs /manager as a non-root user.
FROM scratch
COPY manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
