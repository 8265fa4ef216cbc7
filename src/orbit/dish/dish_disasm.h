/* dish_disasm.h -- a verified image as readable text (`dish disasm`). */
#ifndef DISH_DISASM_H
#define DISH_DISASM_H

#include <stdio.h>

#include "dish_verify.h"

/* Prints every procedure of im (dish_verify's output) to f. */
void dish_disasm(FILE *f, const dish_image *im);

#endif
