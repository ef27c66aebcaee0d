#ifndef HAPI_NGHTTP2_SHIM_H
#define HAPI_NGHTTP2_SHIM_H

#include <nghttp2/nghttp2.h>

#endif
