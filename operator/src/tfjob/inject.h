/*
 * inject.h - the agent injected into a pod whose image does not have it.
 *
 * For a replica that gets the agent (tfj_inject_wanted), the pod gains
 *  - an emptyDir volume `tfjob-agent`;
 *  - an init container `tfjob-agent-install` from the agent image that runs
 *    `tfjob-agent --install /tfj-agent`: it copies the agent bundle (the
 *    binary, its shared libraries and the dynamic loader, staged with ldd at
 *    image build time) into the volume. It runs with the restricted Pod
 *    Security settings (non-root 65532, no privilege escalation, all
 *    capabilities dropped, RuntimeDefault seccomp, read-only root);
 *  - in the tensorflow container, the volume mounted read-only at /tfj-agent
 *    and the command
 *        /tfj-agent/ld.so --library-path /tfj-agent/lib /tfj-agent/tfjob-agent
 *        [--termination-log PATH] [--progress-regex RE] -- COMMAND... ARGS...
 *    (args folded into the command). Starting the agent through the copied
 *    loader makes it independent of the image's libc (glibc of any version,
 *    musl, or none); --library-path, unlike LD_LIBRARY_PATH, is not
 *    inherited, so the trainer runs with the image's own libraries.
 */
#ifndef TFJ_INJECT_H
#define TFJ_INJECT_H

#include <cjson/cJSON.h>

#include "tfjob/podspec.h"
#include "tfjob/tfjob.h"

#define TFJ_INJECT_VOLUME "tfjob-agent"
/*
 * sizeLimit of the agent's emptyDir: the copy is about 15 MB and nothing
 * else writes there (the tensorflow container mounts it read-only), so a
 * runaway copy is evicted instead of filling the node's disk.
 */
#define TFJ_INJECT_VOLUME_LIMIT "64Mi"
#define TFJ_INJECT_INIT "tfjob-agent-install"
#define TFJ_INJECT_DIR "/tfj-agent"

/*
 * 1 when replica type t gets the agent: the annotation says inject, or it
 * is absent, the operator injects by default and the container has a
 * command to wrap (without one the default quietly does not apply).
 */
int tfj_inject_wanted(const struct tfj_tfjob *job, enum tfj_rtype t,
		      const struct tfj_podspec_opts *o);

/*
 * Adds the volume, init container and wrapped command to pod spec `spec`
 * whose tensorflow container is `ctr`. TFJ_EINVAL when the operator has no
 * agent image or the container has no command; TFJ_ENOMEM.
 */
int tfj_inject_pod(cJSON *spec, cJSON *ctr, const struct tfj_tfjob *job,
		   const struct tfj_podspec_opts *o);

#endif
