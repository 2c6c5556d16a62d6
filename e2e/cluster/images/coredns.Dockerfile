# CoreDNS built from the Go module proxy by build-components (static binary).
FROM scratch
COPY coredns /coredns
USER 65532:65532
ENTRYPOINT ["/coredns"]
