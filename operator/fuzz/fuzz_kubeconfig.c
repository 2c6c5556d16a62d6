/*
 * fuzz_kubeconfig.c - the kubeconfig parser on arbitrary bytes.
 * Properties: no crash or leak; a successful parse always has an https
 * server and consistent blob lengths.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfj_kubeconfig kc;

	if (tfj_kubeconfig_parse(&kc, (const char *)data, size, "/base") == 0) {
		if (!kc.server || strncmp(kc.server, "https://", 8) != 0)
			abort();
		if ((kc.ca_data == NULL) != (kc.ca_len == 0))
			abort();
		if ((kc.cert_data || kc.cert_file) != (kc.key_data || kc.key_file))
			abort();
		tfj_kubeconfig_free(&kc);
	}
	return 0;
}
