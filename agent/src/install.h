/*
 * install.h - `tfjob-agent --install DIR`: the injected agent's init
 * container copies the agent bundle out of the agent image into DIR (an
 * emptyDir the training container mounts; operator/src/tfjob/inject.h).
 *
 * The bundle (laid out by scripts/stage-image --bundle at image build
 * time) is a directory holding `tfjob-agent`, `ld.so` (the ELF interpreter
 * the binary was linked against) and `lib/` (every shared library ldd
 * lists). Started as `DIR/ld.so --library-path DIR/lib DIR/tfjob-agent`, the
 * agent depends on nothing in the training image but the kernel.
 */
#ifndef TFJ_AGENT_INSTALL_H
#define TFJ_AGENT_INSTALL_H

/* Where the agent image keeps the bundle; TFJOB_AGENT_BUNDLE overrides it. */
#define TFJ_INSTALL_BUNDLE_DIR "/opt/tfjob-agent"
/* Largest file copied (the biggest library, gRPC core, is about 10 MB). */
#define TFJ_INSTALL_FILE_MAX (64u << 20)

/*
 * Copies the regular files of `src` and of its subdirectories (one level,
 * `lib/`) into `dst` (created if missing), keeping the permission bits;
 * each file is written beside its name and renamed into place, so a
 * restarted init container never leaves a half-written file under the
 * final name. *nfiles counts the files copied. Symbolic links and other
 * file types are refused (the bundle is staged with links resolved).
 * TFJ_ENOTFOUND, TFJ_EINVAL, TFJ_EIO, TFJ_ETOOBIG, TFJ_ENOMEM with a detail
 * naming the path.
 */
int tfj_install_copy(int *nfiles, const char *src, const char *dst);

#endif
