// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-traffic: the statistics library, Pearson's chi-square test of
 * observed counts against expected shares.
 */
#include <math.h>

#include "traffic.h"

/* Regularized upper incomplete gamma Q(a, x) (series / continued fraction). */
static double gamma_q(double a, double x)
{
	double gln = lgamma(a), sum, del, ap, b, c, d, h, an;
	int i;

	if (x <= 0)
		return 1;
	if (x < a + 1) {
		ap = a;
		sum = del = 1 / a;
		for (i = 0; i < 10000; i++) {
			ap += 1;
			del *= x / ap;
			sum += del;
			if (fabs(del) < fabs(sum) * 1e-15)
				break;
		}
		return 1 - sum * exp(-x + a * log(x) - gln);
	}
	b = x + 1 - a;
	c = 1e300;
	d = 1 / b;
	h = d;
	for (i = 1; i < 10000; i++) {
		an = -i * (i - a);
		b += 2;
		d = an * d + b;
		if (fabs(d) < 1e-300)
			d = 1e-300;
		c = b + an / c;
		if (fabs(c) < 1e-300)
			c = 1e-300;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return exp(-x + a * log(x) - gln) * h;
}

/* Pearson's chi-square of counts against the expected shares. */
void spread_test(struct spread *sp, const uint64_t *count)
{
	uint64_t total = 0;
	double e;
	int i, cats = 0;

	for (i = 0; i < nids; i++)
		total += count[i];
	if (!sp->given) {
		for (i = 0; i < nids; i++)
			cats += count[i] > 0;
		for (i = 0; i < nids; i++)
			sp->expect[i] = count[i] ? 1.0 / cats : 0;
		cats = 0;
	}
	sp->chi2 = 0;
	for (i = 0; i < nids; i++) {
		e = total * sp->expect[i];
		if (e > 0) {
			sp->chi2 += (count[i] - e) * (count[i] - e) / e;
			cats++;
		} else if (count[i]) {
			sp->chi2 = INFINITY;
		}
	}
	sp->df = cats > 0 ? cats - 1 : 0;
	if (isinf(sp->chi2))
		sp->p = 0;
	else if (sp->df < 1 || !total)
		sp->p = 1;
	else
		sp->p = gamma_q(sp->df / 2.0, sp->chi2 / 2);
}
