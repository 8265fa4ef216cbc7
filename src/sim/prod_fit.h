/* prod_fit.h -- the fitted parameters of gen-trace's production
 * profile. Written by tools/fit_production.py from
 * data/traces/alibaba/openb_gpu_pods.csv
 * (6178 pods created from day 115 on); do not edit by hand. */
#ifndef AEGIS_PROD_FIT_H
#define AEGIS_PROD_FIT_H

/* gaps between arrivals: Weibull (shape, scale in s) */
#define PROD_GAP_SHAPE 0.682029
#define PROD_GAP_SCALE_S 368.756
/* run time of 1-GPU and of wider jobs: {share longer than
 * PROD_LONG_S, mean and deviation of ln(seconds) of the others,
 * Pareto alpha of the longer ones} */
#define PROD_LONG_S 86400.0
#define PROD_RUN1 { 0.008518, 6.471498, 1.734593, 0.756211 }
#define PROD_RUNW { 0.068493, 6.721267, 2.169562, 0.764113 }
/* the longest run seen: the draws are cut there */
#define PROD_RUN_MAX_S 2612709.0

/* jobs seen of each width: {gpus, count} */
#define PROD_WIDTHS { {1, 6105}, {2, 15}, {4, 15}, {8, 43} }
/* 1-GPU jobs seen of each GPU share: {thousandths, count} */
#define PROD_SHARES { {50, 7}, {110, 17}, {140, 1}, {160, 70}, {220, 59}, {230, 94}, {270, 4}, {290, 1}, {320, 288}, {330, 7}, {350, 5}, {370, 46}, {440, 1}, {460, 124}, {470, 453}, {480, 19}, {550, 71}, {590, 62}, {650, 218}, {810, 1017}, {1000, 3541} }

#endif
