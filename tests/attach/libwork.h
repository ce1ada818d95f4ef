/* SPDX-License-Identifier: MIT */
#ifndef CYGPROF_TEST_LIBWORK_H
#define CYGPROF_TEST_LIBWORK_H
__attribute__((visibility("default"))) void lib_work(void);
#endif
