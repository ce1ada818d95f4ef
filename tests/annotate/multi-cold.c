/* SPDX-License-Identifier: MIT */
/* multi-cold.c - one cheap call (see multi-hot.c). */
extern volatile unsigned long sink;
void cold(void);

void cold(void)
{
	sink++; /* L_CHEAP */
}
