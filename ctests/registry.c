/*
 * The registry and the handle-free calls: dat_registry_add_provider,
 * dat_registry_remove_provider, dat_registry_list_providers, dat_registry_providers_related,
 * dat_strerror, dat_strerror_extension, dat_strerror_ext_status, dat_extension_op. The
 * registry calls and the strerror functions take no handle; for them, the invalid parameters
 * their man pages name and a success. dat_extension_op takes a handle: a garbage one, and an
 * operation no provider defines.
 */
#include "check.h"

#include <dat2/dat_registry.h>
#include <dat2/dat_ib_extensions.h>

#define NAME "ctest-registry-ia"
#define MAX_LIST 1024

/* Whether the list holds NAME. */
static int listed(DAT_PROVIDER_INFO *list, DAT_COUNT n)
{
	for (DAT_COUNT i = 0; i < n; i++)
		if (!strcmp(list[i].ia_name, NAME))
			return 1;
	return 0;
}

int main(void)
{
	static DAT_PROVIDER provider;
	static DAT_PROVIDER_INFO info, list[MAX_LIST];
	DAT_PROVIDER_INFO *slots[MAX_LIST];
	DAT_COUNT n = -1, total = -1;
	DAT_HA_RELATIONSHIP rel;
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
	const char *major, *minor;
	DAT_UINT64 counters[64];

	watchdog(60);
	for (int i = 0; i < MAX_LIST; i++)
		slots[i] = &list[i];
	provider.device_name = NAME;
	snprintf(info.ia_name, sizeof(info.ia_name), "%s", NAME);
	info.dapl_version_major = DAT_VERSION_MAJOR;
	info.dapl_version_minor = DAT_VERSION_MINOR;
	info.is_thread_safe = DAT_FALSE;

	/* dat_registry_add_provider: "DAT_INVALID_PARAMETER: Invalid parameter." */
	expect_type("registry/add_provider-null-provider", dat_registry_add_provider(NULL, &info), DAT_INVALID_PARAMETER);
	expect_type("registry/add_provider-null-info", dat_registry_add_provider(&provider, NULL), DAT_INVALID_PARAMETER);
	expect_ret("registry/add_provider", dat_registry_add_provider(&provider, &info), DAT_SUCCESS);
	/* "An attempt to register the same IA Name again results in an error with the return
	 * value DAT_PROVIDER_ALREADY_REGISTERED." */
	expect_type("registry/add_provider-again", dat_registry_add_provider(&provider, &info),
		    DAT_PROVIDER_ALREADY_REGISTERED);

	/* dat_registry_list_providers, with room for every entry: "If the operation is successful,
	 * the returned value is DAT_SUCCESS and number_entries indicates the number of entries
	 * filled by the registry in dat_provider_list." */
	expect_ret("registry/list_providers", dat_registry_list_providers(MAX_LIST, &total, slots), DAT_SUCCESS);
	expect_true("registry/list_providers-lists-added", total >= 2 && total <= MAX_LIST && listed(list, total),
		    "the list holds " NAME " and the built-in IA");
	/* "If dat_provider_list is too small, including pointing to NULL for the registry entries,
	 * then the operation fails with the return DAT_INVALID_PARAMETER." and "If the operation is
	 * not successful, then number_entries returns the number of entries in the registry." */
	n = -1;
	expect_type("registry/list_providers-null-list", dat_registry_list_providers(MAX_LIST, &n, NULL),
		    DAT_INVALID_PARAMETER);
	expect_true("registry/list_providers-null-list-count", n == total, "number_entries: the registry's entries");
	n = -1;
	expect_type("registry/list_providers-too-small", dat_registry_list_providers(1, &n, slots),
		    DAT_INVALID_PARAMETER);
	expect_true("registry/list_providers-too-small-count", n == total, "number_entries: the registry's entries");

	/* dat_registry_providers_related (DAT 2.0, no man page): names and the out-pointer. */
	expect_type("registry/providers_related-null-out", dat_registry_providers_related(ia_name(), ia_name(), NULL),
		    DAT_INVALID_PARAMETER);
	expect_type("registry/providers_related-null-name", dat_registry_providers_related(NULL, ia_name(), &rel),
		    DAT_INVALID_PARAMETER);
	expect_ret("registry/providers_related", dat_registry_providers_related(ia_name(), ia_name(), &rel),
		   DAT_SUCCESS);

	/* dat_registry_remove_provider: "DAT_INVALID_PARAMETER: Invalid parameter. The Provider
	 * was not found." */
	expect_type("registry/remove_provider-null-info", dat_registry_remove_provider(&provider, NULL),
		    DAT_INVALID_PARAMETER);
	expect_ret("registry/remove_provider", dat_registry_remove_provider(&provider, &info), DAT_SUCCESS);
	expect_type("registry/remove_provider-not-found", dat_registry_remove_provider(&provider, &info),
		    DAT_INVALID_PARAMETER);
	n = -1;
	dat_registry_list_providers(MAX_LIST, &n, slots);
	expect_true("registry/remove_provider-unlisted", n >= 0 && n <= MAX_LIST && !listed(list, n),
		    "the list no longer holds " NAME);

	/* dat_strerror: "If an undefined DAT_RETURN value was passed as the return parameter, the
	 * operation fails with DAT_INVALID_PARAMETER returned. The operation succeeds when
	 * DAT_SUCCESS is passed in as the return parameter." */
	expect_type("registry/strerror-undefined-type", dat_strerror(DAT_ERROR(0x3ff00000, 0), &major, &minor),
		    DAT_INVALID_PARAMETER);
	expect_type("registry/strerror-undefined-subtype",
		    dat_strerror(DAT_ERROR(DAT_INVALID_HANDLE, 0xfff0), &major, &minor), DAT_INVALID_PARAMETER);
	major = minor = NULL;
	expect_ret("registry/strerror-success", dat_strerror(DAT_SUCCESS, &major, &minor), DAT_SUCCESS);
	major = minor = NULL;
	expect_ret("registry/strerror", dat_strerror(DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP), &major, &minor),
		   DAT_SUCCESS);
	expect_true("registry/strerror-strings", major && minor && strstr(major, "INVALID_HANDLE") &&
		    strstr(minor, "HANDLE_EP"), "the type's and the subtype's names");

	/* dat_strerror_extension and dat_strerror_ext_status (dat_ib_extensions.h, no man page;
	 * OpenFabrics defines them inline there): the extension's return type by its name, any other
	 * code as dat_strerror names it; a known completion status by its name, success as a blank,
	 * an unknown status DAT_INVALID_PARAMETER. A NULL message pointer is an invalid parameter,
	 * as for dat_strerror. */
	major = NULL;
	expect_ret("registry/strerror_extension-ib-err", dat_strerror_extension(DAT_IB_ERR, &major), DAT_SUCCESS);
	expect_true("registry/strerror_extension-ib-err-string", major && !strcmp(major, "DAT_IB_ERR"),
		    "DAT_IB_ERR");
	major = NULL;
	expect_ret("registry/strerror_extension-standard",
		   dat_strerror_extension((DAT_IB_RETURN)DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP), &major),
		   DAT_SUCCESS);
	expect_true("registry/strerror_extension-standard-string", major && strstr(major, "INVALID_HANDLE"),
		    "the standard type's name");
	expect_type("registry/strerror_extension-undefined",
		    dat_strerror_extension((DAT_IB_RETURN)DAT_ERROR(0x3ff00000, 0), &major), DAT_INVALID_PARAMETER);
	expect_type("registry/strerror_extension-null-message", dat_strerror_extension(DAT_IB_ERR, NULL),
		    DAT_INVALID_PARAMETER);
	major = NULL;
	expect_ret("registry/strerror_ext_status-op-err", dat_strerror_ext_status(DAT_IB_OP_ERR, &major), DAT_SUCCESS);
	expect_true("registry/strerror_ext_status-op-err-string", major && !strcmp(major, "DAT_IB_OP_ERR"),
		    "DAT_IB_OP_ERR");
	major = NULL;
	expect_ret("registry/strerror_ext_status-success", dat_strerror_ext_status(DAT_OP_SUCCESS, &major),
		   DAT_SUCCESS);
	expect_true("registry/strerror_ext_status-success-string", major && !strcmp(major, " "), "a blank");
	expect_type("registry/strerror_ext_status-unknown", dat_strerror_ext_status((DAT_IB_STATUS)0x7fff, &major),
		    DAT_INVALID_PARAMETER);
	expect_type("registry/strerror_ext_status-null-message", dat_strerror_ext_status(DAT_IB_OP_ERR, NULL),
		    DAT_INVALID_PARAMETER);

	/* dat_extension_op (DAT 2.0, no man page): a garbage handle; an operation no extension
	 * defines. */
	if (dat_ia_open(ia_name(), 8, &async_evd, &ia) != DAT_SUCCESS) {
		fprintf(stderr, "registry: cannot open %s\n", ia_name());
		return 2;
	}
	expect_type("registry/extension_op-garbage",
		    dat_extension_op(GARBAGE_HANDLE, DAT_IB_QUERY_COUNTERS_OP, 0, counters, 0), DAT_INVALID_HANDLE);
	expect_type("registry/extension_op-unknown-op", dat_extension_op(ia, 0x7fff), DAT_INVALID_PARAMETER);
	if (dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS)
		dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
	return check_failures ? 1 : 0;
}
