#ifndef HAPI_CURL_SHIM_H
#define HAPI_CURL_SHIM_H

#include <curl/curl.h>

/* curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic: Swift cannot call
   them. One typed wrapper per argument kind. */
static inline CURLcode hapi_curl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode hapi_curl_easy_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode hapi_curl_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode hapi_curl_easy_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode hapi_curl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }

typedef size_t (*hapi_curl_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);
static inline CURLcode hapi_curl_easy_setopt_data_callback(CURL *h, CURLoption o, hapi_curl_data_callback cb) { return curl_easy_setopt(h, o, cb); }

static inline CURLcode hapi_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }

static inline CURLMcode hapi_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

/* CURLVERSION_NOW does not import. */
static inline curl_version_info_data *hapi_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }

/* Added for the HTTP client. */
static inline CURLcode hapi_curl_easy_setopt_blob(CURL *h, CURLoption o, struct curl_blob *v) { return curl_easy_setopt(h, o, v); }
/* CURL_GLOBAL_ALL is a composite macro that does not import. */
static inline CURLcode hapi_curl_global_init_all(void) { return curl_global_init(CURL_GLOBAL_ALL); }
/* CURLMsg carries its result in an anonymous union. */
static inline int hapi_curl_msg_is_done(const CURLMsg *m) { return m->msg == CURLMSG_DONE; }
static inline CURLcode hapi_curl_msg_result(const CURLMsg *m) { return m->data.result; }
static inline CURL *hapi_curl_msg_easy(const CURLMsg *m) { return m->easy_handle; }
/* CURLOPT_OPENSOCKETFUNCTION: the address policy judges the address libcurl is about to use. */
typedef curl_socket_t (*hapi_curl_opensocket_callback)(void *clientp, curlsocktype purpose, struct curl_sockaddr *address);
static inline CURLcode hapi_curl_easy_setopt_opensocket(CURL *h, hapi_curl_opensocket_callback cb) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, cb); }
static inline curl_socket_t hapi_curl_socket_bad(void) { return CURL_SOCKET_BAD; }

/* Added for proxy tunnels: CURLINFO_ACTIVESOCKET fills a curl_socket_t. */
static inline CURLcode hapi_curl_easy_getinfo_socket(CURL *h, CURLINFO i, curl_socket_t *v) { return curl_easy_getinfo(h, i, v); }

#endif
