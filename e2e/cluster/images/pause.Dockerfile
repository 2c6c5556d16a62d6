# Sandbox image: Kubernetes' pause.c compiled statically by build-components.
FROM scratch
COPY pause /pause
USER 65535:65535
ENTRYPOINT ["/pause"]
