/* Throwaway certificate authority, server certificate and TLS context. Keys live only in memory. */
#include "lb_internal.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

static void tls_error(char *err, size_t errlen, const char *what) {
    char detail[256];
    ERR_error_string_n(ERR_get_error(), detail, sizeof detail);
    snprintf(err, errlen, "%s: %s", what, detail);
    ERR_clear_error();
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext) return 0;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}

/* A certificate for `key` named `cn`, signed by issuer/issuer_key (self-signed when issuer is NULL). */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key) {
    X509 *cert = X509_new();
    BIGNUM *serial = BN_new();
    int ok = cert && serial && X509_set_version(cert, X509_VERSION_3) &&
             BN_rand(serial, 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
             BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert)) &&
             X509_gmtime_adj(X509_getm_notBefore(cert), -3600) &&
             X509_gmtime_adj(X509_getm_notAfter(cert), 86400) && X509_set_pubkey(cert, key);
    BN_free(serial);
    if (ok) {
        X509_NAME *name = X509_get_subject_name(cert);
        ok = X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                                        (const unsigned char *)"hapi-push loopback", -1, -1, 0) &&
             X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1,
                                        -1, 0) &&
             X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name);
    }
    X509 *signer = issuer ? issuer : cert;
    if (ok && !issuer) {
        ok = add_ext(cert, signer, NID_basic_constraints, "critical,CA:TRUE") &&
             add_ext(cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign") &&
             add_ext(cert, signer, NID_subject_key_identifier, "hash");
    } else if (ok) {
        ok = add_ext(cert, signer, NID_basic_constraints, "critical,CA:FALSE") &&
             add_ext(cert, signer, NID_key_usage, "critical,digitalSignature") &&
             add_ext(cert, signer, NID_ext_key_usage, "serverAuth") &&
             add_ext(cert, signer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost") &&
             add_ext(cert, signer, NID_subject_key_identifier, "hash") &&
             add_ext(cert, signer, NID_authority_key_identifier, "keyid:always");
    }
    if (ok) ok = X509_sign(cert, issuer_key, EVP_sha256()) > 0;
    if (!ok) {
        X509_free(cert);
        return NULL;
    }
    return cert;
}

/* ALPN: prefer h2, fall back to http/1.1; with neither, carry on without ALPN (sniffed later). */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl;
    static const unsigned char preferred[] = "\x02h2\x08http/1.1";
    static const unsigned char http1[] = "\x08http/1.1";
    const int http1_only = arg != NULL;
    unsigned char *selected = NULL;
    if (SSL_select_next_proto(&selected, outlen, http1_only ? http1 : preferred,
                              http1_only ? sizeof http1 - 1 : sizeof preferred - 1, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
}

SSL_CTX *hapi_lb_tls_context_new(const char *ca_path, int http1_only, char *err, size_t errlen) {
    SSL_CTX *ctx = NULL;
    EVP_PKEY *ca_key = EVP_EC_gen("P-256");
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *ca = NULL, *cert = NULL;
    if (!ca_key || !key) {
        tls_error(err, errlen, "key generation failed");
        goto done;
    }
    ca = make_cert(ca_key, "hapi-push loopback CA", NULL, ca_key);
    cert = ca ? make_cert(key, "localhost", ca, ca_key) : NULL;
    if (!cert) {
        tls_error(err, errlen, "certificate creation failed");
        goto done;
    }
    FILE *f = fopen(ca_path, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s", ca_path);
        goto done;
    }
    int written = PEM_write_X509(f, ca);
    if (fclose(f) != 0 || !written) {
        snprintf(err, errlen, "cannot write %s", ca_path);
        goto done;
    }
    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
        SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        tls_error(err, errlen, "TLS context setup failed");
        SSL_CTX_free(ctx);
        ctx = NULL;
        goto done;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* Partial writes + moving buffer: our output queue may be compacted between retries. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    /* No session tickets: nothing to write after the handshake that the client did not ask for. */
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    /* Any non-NULL argument means "http/1.1 only". */
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, http1_only ? (void *)ctx : NULL);
done:
    X509_free(cert);
    X509_free(ca);
    EVP_PKEY_free(key);
    EVP_PKEY_free(ca_key);
    return ctx;
}
