"""Mehrotra's predictor-corrector step, shared by the exact finish's
interior point on the host (lp.finish, numpy) and on a device (lp.ipm,
jax): array-agnostic, so both iterate alike."""

from __future__ import annotations


def predictor_corrector(direction, step, point, gap, m_gap):
  """Mehrotra's step (Nocedal & Wright, Alg. 14.3) from the point (w, row
  slacks, box slacks su and sb, their multipliers mu, pu, pl): the affine
  direction, its gap after the largest steps, centring sigma = (gap_aff /
  gap)^3, the corrected direction, 0.99 of the largest steps. `direction`
  maps complementarity residuals (rows, z <= B, -z <= B) to the 7 steps
  (dw, dsl, dmu, dsu, dpu, dsb, dpl); `step` gives the largest alpha <= 1
  keeping its (v, dv) pairs >= 0. numpy or jax arrays alike (lp.finish._ipm,
  lp.ipm)."""
  w, sl, su, sb, mu, pu, pl = point
  aff = direction(sl * mu, su * pu, sb * pl)
  a_p = step([(sl, aff[1]), (su, aff[3]), (sb, aff[5])])
  a_d = step([(mu, aff[2]), (pu, aff[4]), (pl, aff[6])])
  gap_aff = ((sl + a_p * aff[1]) @ (mu + a_d * aff[2]) +
             (su + a_p * aff[3]) @ (pu + a_d * aff[4]) +
             (sb + a_p * aff[5]) @ (pl + a_d * aff[6]))
  target = (gap_aff / gap) ** 3 * m_gap
  dw, dsl, dmu, dsu, dpu, dsb, dpl = direction(
      sl * mu + aff[1] * aff[2] - target, su * pu + aff[3] * aff[4] - target,
      sb * pl + aff[5] * aff[6] - target)
  a_p = 0.99 * step([(sl, dsl), (su, dsu), (sb, dsb)])
  a_d = 0.99 * step([(mu, dmu), (pu, dpu), (pl, dpl)])
  return (w + a_p * dw, sl + a_p * dsl, su + a_p * dsu, sb + a_p * dsb,
          mu + a_d * dmu, pu + a_d * dpu, pl + a_d * dpl)
