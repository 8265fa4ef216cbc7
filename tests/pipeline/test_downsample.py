"""aegis_downsample, Modyn's learned selection at the trainer: each
strategy's scores and choice worked by hand (Loss's probabilities and
importance weights, GradNorm's closed form against autograd, the three
uncertainty scores, RHOLoss's top-k, RS2's subsets across epochs), batches
rebuilt to exactly batch_size, a sample-then-batch choice written once as
a training set and read back, bad configs refused naming their key, the
config in force under warm-up and thresholds, and the same seed choosing
the same.

usage: PYTHONPATH=python /usr/bin/python3 tests/pipeline/test_downsample.py
"""
import json
import os
import struct
import tempfile
import unittest
import zlib

import numpy as np
import torch
import torch.nn.functional as F
import torch.utils.data

import aegis_downsample as ads
import aegis_pipeline


def given_losses(output, target):
    """A per-sample "loss" that is the output itself: the tests choose
    the losses directly."""
    return output.float().reshape(-1)


def loss_sampler(ratio, seed=0, trigger=0):
    return ads.Loss(ratio, seed=seed, trigger=trigger, loss=given_losses)


def choose(d, losses, ids=None, epoch=0):
    d.set_epoch(epoch)
    ids = list(range(len(losses))) if ids is None else ids
    d.inform_samples(ids, torch.tensor(losses), torch.zeros(len(losses)))
    return d.select_points()


class LossSampling(unittest.TestCase):
    def test_two_samples_by_hand(self):
        # losses [1, 3]: p = [1/4, 3/4]; ratio 50 keeps 1 of 2. Modyn's
        # weight 1 / (n p): 1 / (2 * 1/4) = 2 for the first, 1 / (2 * 3/4)
        # = 2/3 for the second.
        d = loss_sampler(50)
        second = 0
        for epoch in range(4000):
            ids, w = choose(d, [1.0, 3.0], [7, 9], epoch)
            self.assertEqual(len(ids), 1)
            want = {7: 2.0, 9: 2 / 3}[int(ids[0])]
            self.assertAlmostEqual(float(w[0]), want, places=6)
            second += int(ids[0]) == 9
        self.assertAlmostEqual(second / 4000, 0.75, delta=0.03)

    def test_without_replacement_as_successive_draws(self):
        # p = [0.5, 0.3, 0.2], k = 2, drawn one after the other without
        # replacement: P{0,1} = .5*.3/.5 + .3*.5/.7 = .5143,
        # P{0,2} = .5*.2/.5 + .2*.5/.8 = .325, P{1,2} = .3*.2/.7 + .2*.3/.8
        # = .1607 (ratio 67 of 3 keeps 2).
        d = loss_sampler(67)
        counts = {}
        for epoch in range(6000):
            ids, w = choose(d, [5.0, 3.0, 2.0], None, epoch)
            pair = tuple(sorted(ids.tolist()))
            counts[pair] = counts.get(pair, 0) + 1
            # weights: 1 / (3 p): 2/3, 10/9, 5/3
            expect = {0: 2 / 3, 1: 10 / 9, 2: 5 / 3}
            for i, wi in zip(ids.tolist(), w.tolist()):
                self.assertAlmostEqual(wi, expect[i], places=5)
        for pair, p in {(0, 1): .5143, (0, 2): .325, (1, 2): .1607}.items():
            self.assertAlmostEqual(counts[pair] / 6000, p, delta=0.025)

    def test_cross_entropy_default(self):
        # logits [0, ln 3] -> softmax [1/4, 3/4]: target 0 loses ln 4,
        # target 1 loses ln(4/3); ratio 100 keeps both, weights
        # (ln 4 + ln 4/3) / (2 * loss).
        d = ads.Loss(100)
        logits = torch.tensor([[0.0, np.log(3)], [0.0, np.log(3)]])
        d.inform_samples(np.array([0, 1]), logits, np.array([0, 1]))
        ids, w = d.select_points()
        total = np.log(4) + np.log(4 / 3)
        self.assertEqual(ids.tolist(), [0, 1])
        np.testing.assert_allclose(w, [total / (2 * np.log(4)),
                                       total / (2 * np.log(4 / 3))],
                                   rtol=1e-5)

    def test_all_zero_losses(self):
        # nothing to prefer: uniform, weight 1
        ids, w = choose(loss_sampler(50), [0.0, 0.0, 0.0, 0.0])
        self.assertEqual((len(ids), w.tolist()), (2, [1.0, 1.0]))

    def test_too_few_positive_losses(self):
        # losses [2, 0, 0, 0], keep 2: p = [1, 0, 0, 0], so key 0 with
        # weight 1 / (4 * 1) = 1/4, and one zero-loss sample to make up
        # the 2, weight 0 (its loss is 0; Modyn's 1 / (n p) is infinite).
        ids, w = choose(loss_sampler(50), [2.0, 0.0, 0.0, 0.0])
        got = dict(zip(ids.tolist(), w.tolist()))
        self.assertAlmostEqual(got.pop(0), 0.25)
        self.assertEqual(list(got.values()), [0.0])

    def test_negative_loss_refused(self):
        with self.assertRaisesRegex(ValueError, "Loss"):
            choose(loss_sampler(50), [1.0, -1.0])

    def test_at_least_one(self):
        ids, _ = choose(loss_sampler(1), [1.0, 2.0, 3.0])   # 1% of 3 -> 1
        self.assertEqual(len(ids), 1)

    def test_ratio_is_whole(self):
        # A fraction was taken, and the first choice failed in torch.topk
        # ("argument 'k' must be int, not float"); a str was a TypeError
        # from a comparison.
        for args, want in (((50.5,), "Loss.ratio: 50.5 is not a whole"),
                           ((1, 2.5), "Loss.ratio_max: 2.5 is not a whole"),
                           (("50",), "Loss.ratio: '50' is not a whole"),
                           ((True,), "Loss.ratio: True is not a whole"),
                           ((101,), "Loss.ratio: 101 is out of range; it "
                                    "must be from 0 to 100"),
                           ((0, 0), "Loss.ratio_max: 0 is out of range")):
            with self.assertRaisesRegex(ValueError, want, msg=args):
                ads.Loss(*args)
        self.assertEqual(ads.Loss(np.int64(50)).target_size(4), 2)

    def test_keys_and_outputs_must_match(self):
        # Keys are matched to scores by position over all the batches
        # informed: a batch with two keys too many shifted every later
        # batch's keys (the choice named samples it had not scored), and
        # one with too few was an IndexError at select_points.
        for d in (ads.Loss(100), ads.GradNorm(100),
                  ads.Uncertainty("Entropy", 100)):
            for ids in ([0, 1, 2, 3, 4], [0], torch.arange(5)):
                with self.assertRaisesRegex(
                        ValueError, f"inform_samples: {len(ids)} sample_ids "
                        f"but 3 scores", msg=(d, ids)):
                    d.inform_samples(ids, torch.rand(3, 2),
                                     torch.zeros(3, dtype=torch.long))
            self.assertEqual(d.select_points()[0].tolist(), [])


class SetEpoch(unittest.TestCase):
    def test_refused_when_set(self):
        # numpy's "expected non-negative integer" from the seed, not naming
        # the epoch; 2.5 was taken
        d = ads.make({"strategy": "Loss", "ratio": 50})
        for epoch in (-1, 2.5, "1"):
            with self.assertRaisesRegex(ValueError, "set_epoch.epoch",
                                        msg=epoch):
                d.set_epoch(epoch)
        d.set_epoch(np.int64(3))
        self.assertEqual(d.epoch, 3)


class GradNormScores(unittest.TestCase):
    def test_closed_form_by_hand(self):
        # 2 classes, logits [0, ln 3]: softmax [1/4, 3/4]. Target 0:
        # g = [-3/4, 3/4], |g| = 3/4 sqrt 2 = 1.06066; target 1:
        # g = [1/4, -1/4], |g| = 1/4 sqrt 2 = 0.35355.
        z = torch.tensor([[0.0, np.log(3)], [0.0, np.log(3)]])
        got = ads.gradnorm_scores(z, torch.tensor([0, 1]))
        np.testing.assert_allclose(got, [1.06066, 0.35355], rtol=1e-4)

    def autograd_norms(self, layer, e, y, only_logits=False):
        norms = []
        for i in range(len(y)):
            layer.zero_grad()
            z = layer(e[i:i + 1])
            if only_logits:
                z.retain_grad()
            F.cross_entropy(z, y[i:i + 1]).backward()
            if only_logits:
                norms.append(z.grad.norm().item())
            else:
                grads = [p.grad.reshape(-1) for p in layer.parameters()]
                norms.append(torch.cat(grads).norm().item())
        return norms

    def test_against_autograd(self):
        torch.manual_seed(3)
        e = torch.randn(5, 4)
        y = torch.tensor([0, 1, 1, 0, 1])
        for bias in (True, False):
            layer = torch.nn.Linear(4, 2, bias=bias).double()
            z = layer(e.double()).detach()
            want = self.autograd_norms(layer, e.double(), y)
            got = ads.gradnorm_scores(z, y, e.double(), bias=bias)
            np.testing.assert_allclose(got, want, rtol=1e-6)
            # without the embedding: the gradient at the logits (Modyn's)
            want = self.autograd_norms(layer, e.double(), y, True)
            np.testing.assert_allclose(ads.gradnorm_scores(z, y), want,
                                       rtol=1e-6)

    def test_custom_loss_by_autograd(self):
        # a custom loss goes through autograd on the outputs: for the same
        # cross-entropy it agrees with the closed form, and needs no
        # gradients from the forward pass.
        z = torch.randn(6, 3)
        y = torch.tensor([0, 1, 2, 0, 1, 2])
        with torch.no_grad():
            got = ads.gradnorm_scores(z, y, loss=lambda o, t: F.cross_entropy(
                o, t, reduction="none"))
        np.testing.assert_allclose(got, ads.gradnorm_scores(z, y), rtol=1e-5)

    def test_binary_logit(self):
        # one logit 0 with target 1: sigmoid 1/2, g = -1/2, |g| = 1/2.
        got = ads.gradnorm_scores(torch.tensor([0.0, 0.0]),
                                  torch.tensor([1.0, 0.0]))
        np.testing.assert_allclose(got, [0.5, 0.5])

    def test_downsampler(self):
        # scores [1.06066, 0.35355] (above), ratio 50: weights 1 / (2 p)
        d = ads.GradNorm(50)
        z = torch.tensor([[0.0, np.log(3)], [0.0, np.log(3)]])
        d.inform_samples([4, 5], z, torch.tensor([0, 1]))
        ids, w = d.select_points()
        p = {4: 0.75, 5: 0.25}[int(ids[0])]
        self.assertAlmostEqual(float(w[0]), 1 / (2 * p), places=5)


class UncertaintyScores(unittest.TestCase):
    # class probabilities, given as their logs:
    #   A [.49, .49, .02]: highest .49, sum p ln p = 2 * .49 ln .49
    #     + .02 ln .02 = -.69910 - .07824 = -.77734, margin 0
    #   B [.40, .30, .30]: .40, .4 ln .4 + .6 ln .3 = -.36652 - .72238
    #     = -1.08890, margin .10
    #   C [.60, .20, .20]: .60, .6 ln .6 + .4 ln .2 = -.30650 - .64378
    #     = -.95028, margin .40
    P = np.array([[.49, .49, .02], [.40, .30, .30], [.60, .20, .20]])
    WANT = {"LeastConfidence": [.49, .40, .60],
            "Entropy": [-.77734, -1.08890, -.95028],
            "Margin": [0.0, .10, .40]}
    # Keeping 1 of 3 (ratio 34): the smallest score, B, B and A.
    KEPT = {"LeastConfidence": 11, "Entropy": 11, "Margin": 10}

    def test_scores_by_hand(self):
        z = torch.log(torch.tensor(self.P))
        for metric, want in self.WANT.items():
            np.testing.assert_allclose(ads.uncertainty_scores(z, metric),
                                       want, atol=1e-4, err_msg=metric)

    def test_keeps_the_most_uncertain(self):
        z = torch.log(torch.tensor(self.P))
        for metric, kept in self.KEPT.items():
            d = ads.make({"strategy": "Uncertainty", "ratio": 34,
                          "score_metric": metric})
            d.inform_samples([10, 11, 12], z, torch.tensor([0, 0, 0]))
            ids, w = d.select_points()
            self.assertEqual((ids.tolist(), w.tolist()), ([kept], [1.0]),
                             metric)

    def test_margin_of_a_binary_logit(self):
        # one logit z: p = sigmoid(z); margin |2p - 1|: z = 0 -> 0,
        # z = ln 3 (p = 3/4) -> 1/2.
        got = ads.uncertainty_scores(torch.tensor([0.0, np.log(3)]), "Margin")
        np.testing.assert_allclose(got, [0.0, 0.5], atol=1e-6)

    def test_balanced(self):
        # labels [0, 0, 0, 0, 1, 1], ratio 50: 2 of label 0 and 1 of label
        # 1, each the least confident of its label.
        conf = [.9, .5, .6, .95, .7, .8]
        z = torch.log(torch.tensor([[c, 1 - c] for c in conf]))
        d = ads.make({"strategy": "Uncertainty", "ratio": 50,
                      "score_metric": "LeastConfidence", "balance": True,
                      "sample_then_batch": True})
        d.inform_samples(list(range(6)), z, torch.tensor([0, 0, 0, 0, 1, 1]))
        ids, _ = d.select_points()
        self.assertEqual(sorted(ids.tolist()), [1, 2, 4])


class RHOLossTopK(unittest.TestCase):
    # losses [2, 1, 3, .5] minus irreducible [1.5, .2, 2.9, .1] =
    # [.5, .8, .1, .4]; ratio 50 keeps the 2 largest: keys 10 and 11.
    LOSSES = [2.0, 1.0, 3.0, 0.5]
    IL = [1.5, 0.2, 2.9, 0.1]

    def check(self, irreducible):
        d = ads.make({"strategy": "RHOLoss", "ratio": 50,
                      "holdout_set_ratio": 10,
                      "holdout_set_strategy": "Simple"},
                     loss=given_losses, irreducible_loss=irreducible)
        d.inform_samples([10, 11, 12, 13], torch.tensor(self.LOSSES),
                         torch.zeros(4), forward_input=torch.zeros(4, 2))
        ids, w = d.select_points()
        self.assertEqual((ids.tolist(), w.tolist()), ([10, 11], [1.0, 1.0]))

    def test_per_key_array(self):
        self.check(np.array([9.0] * 10 + self.IL))

    def test_function(self):
        seen = []

        def il(ids, inputs, target):
            seen.append(inputs.shape)
            return torch.tensor(self.IL)
        self.check(il)
        self.assertEqual(seen, [(4, 2)])

    def test_unscored_key_refused(self):
        # A NaN irreducible loss (irreducible_losses' mark of a key no IL
        # model scored) sorted above every reducible loss, and such keys
        # were kept first, without a word.
        il = np.array([9.0] * 10 + self.IL, dtype=np.float32)
        il[12] = np.nan
        for irreducible in (il, lambda ids, inputs, target:
                            torch.from_numpy(il[10:14])):
            with self.assertRaisesRegex(ValueError, "irreducible_loss: no "
                                        "loss for key 12 \\(NaN\\)"):
                self.check(irreducible)

    def test_function_with_other_count_refused(self):
        # More losses than samples: the NaN check indexed the keys by a
        # loss's position (an IndexError), or the difference broadcast.
        for il in (self.IL + [0.3], self.IL[:3], [[0.1] * 4] * 4):
            with self.assertRaisesRegex(ValueError, "irreducible_loss: "
                                        "returned [0-9]+ losses for 4 "
                                        "samples"):
                self.check(lambda ids, inputs, target, il=il:
                           torch.tensor(il))

    def test_needs_irreducible_losses(self):
        with self.assertRaisesRegex(ValueError, "irreducible_loss"):
            ads.make({"strategy": "RHOLoss", "ratio": 50})

    def test_aegis_pipeline_hook(self):
        # aegis_pipeline.downsampler() is from_env() of this process
        old = os.environ.get("AEGIS_DOWNSAMPLING")
        os.environ["AEGIS_DOWNSAMPLING"] = json.dumps({"strategy": "Loss",
                                                       "ratio": 50})
        try:
            self.assertIsInstance(aegis_pipeline.downsampler(), ads.Loss)
        finally:
            if old is None:
                del os.environ["AEGIS_DOWNSAMPLING"]
            else:
                os.environ["AEGIS_DOWNSAMPLING"] = old

    def test_losses_of_the_supervisors_il_models(self):
        # the supervisor's N.il (sup_rho.c): keys 10..13 with the IL
        # losses as weights; from_env finds them through AEGIS_IL_LOSSES
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "0.il")
            write_trainset(path, [10, 11, 12, 13], self.IL)
            env = {"AEGIS_DOWNSAMPLING": json.dumps(
                       {"strategy": "RHOLoss", "ratio": 50}),
                   "AEGIS_IL_LOSSES": path}
            d = ads.from_env(env, loss=given_losses)
            by_key = ads.irreducible_losses(path)
        self.assertTrue(np.isnan(by_key[:10]).all())
        np.testing.assert_allclose(by_key[10:], self.IL, rtol=1e-6)
        d.inform_samples([10, 11, 12, 13], torch.tensor(self.LOSSES),
                         torch.zeros(4), forward_input=torch.zeros(4, 2))
        self.assertEqual(d.select_points()[0].tolist(), [10, 11])


class RS2Subsets(unittest.TestCase):
    def rs2(self, replacement, seed=0):
        return ads.make({"strategy": "RS2", "ratio": 50,
                         "with_replacement": replacement}, seed, 4)

    def subset(self, d, epoch, keys=range(100, 110)):
        d.set_epoch(epoch)
        d.inform_samples(list(keys))
        ids, w = d.select_points()
        self.assertTrue((w == 1).all())
        return ids.tolist()

    def test_without_replacement_covers_each_once(self):
        # 10 keys, 5 an epoch: epochs 0-1 see each key once, 2-3 again,
        # in another order.
        d = self.rs2(False)
        subsets = [self.subset(d, e) for e in range(4)]
        every = list(range(100, 110))
        self.assertEqual(sorted(subsets[0] + subsets[1]), every)
        self.assertEqual(sorted(subsets[2] + subsets[3]), every)
        self.assertNotEqual(sorted(subsets[0]), sorted(subsets[2]))
        self.assertTrue(all(len(s) == 5 for s in subsets))

    def test_order_of_informing_does_not_matter(self):
        d = self.rs2(False)
        self.assertEqual(self.subset(d, 1), self.subset(
            d, 1, keys=reversed(range(100, 110))))

    def test_with_replacement_each_epoch_afresh(self):
        d = self.rs2(True)
        subsets = [self.subset(d, e) for e in range(6)]
        self.assertTrue(all(len(set(s)) == 5 for s in subsets))
        # 6 epochs of independent halves: some key twice in epochs 0-1
        # is likely; all pairs disjoint (as without replacement) is not.
        self.assertTrue(any(set(subsets[i]) & set(subsets[i + 1])
                            for i in range(0, 6, 2)))

    def test_batch_then_sample_refused(self):
        d = self.rs2(False)
        with self.assertRaisesRegex(ValueError, "sample_then_batch"):
            ads.BatchThenSample(d, 8)
        with self.assertRaisesRegex(ValueError, "sample_then_batch"):
            ads.make({"strategy": "RS2", "ratio": 50, "with_replacement": True,
                      "sample_then_batch": False})


class Accumulator(unittest.TestCase):
    def part(self, start, n):
        ids = torch.arange(start, start + n)
        return ids.float()[:, None], ids % 2, torch.ones(n), ids

    def test_full_batches_and_the_rest(self):
        # parts of 3, 3, 3 into batches of 4: [0 1 2 10], [11 12 20 21],
        # then 22 left for flush.
        acc = ads.BatchAccumulator(4)
        self.assertEqual(acc.add(*self.part(0, 3)), [])
        (b1,) = acc.add(*self.part(10, 3))
        (b2,) = acc.add(*self.part(20, 3))
        self.assertEqual(b1[3].tolist(), [0, 1, 2, 10])
        self.assertEqual(b2[3].tolist(), [11, 12, 20, 21])
        self.assertEqual(b2[0][:, 0].tolist(), [11, 12, 20, 21])
        rest = acc.flush()
        self.assertEqual(rest[3].tolist(), [22])
        self.assertIsNone(acc.flush())

    def test_one_part_makes_several(self):
        acc = ads.BatchAccumulator(2)
        got = acc.add(*self.part(0, 5))
        self.assertEqual([b[3].tolist() for b in got], [[0, 1], [2, 3]])
        self.assertEqual(len(acc), 1)

    def test_dict_inputs(self):
        acc = ads.BatchAccumulator(3)
        for start in (0, 10):
            x, y, w, ids = self.part(start, 2)
            got = acc.add({"a": x, "b": x * 2}, y, w, ids)
        self.assertEqual(got[0][0]["b"][:, 0].tolist(), [0, 2, 20])


class BatchThenSampleEpoch(unittest.TestCase):
    def loader(self, nbatches, size=8):
        for b in range(nbatches):
            ids = torch.arange(b * size, (b + 1) * size)
            x = ids.float()[:, None].repeat(1, 3)
            w = torch.full((size,), 2.0, dtype=torch.float64)
            yield x, ids % 3, w, ids

    def run_epoch(self, nbatches, seed=0):
        d = ads.make({"strategy": "Loss", "ratio": 50}, seed)
        bts = ads.BatchThenSample(d, batch_size=8)
        bts.set_epoch(0)
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 3)
        return list(bts.batches(self.loader(nbatches), model))

    def test_full_batches(self):
        # 9 batches of 8, half kept: 36 samples = 4 batches of 8 and 4.
        got = self.run_epoch(9)
        self.assertEqual([len(b[3]) for b in got], [8, 8, 8, 8, 4])
        for x, y, w, ids in got:
            # each kept sample still with its own features and label
            self.assertTrue(torch.equal(x[:, 0], ids.float()))
            self.assertTrue(torch.equal(y, ids % 3))
            self.assertEqual(w.dtype, torch.float32)
        ids = torch.cat([b[3] for b in got])
        self.assertEqual(len(set(ids.tolist())), 36)
        # 4 of each loader batch
        self.assertEqual(torch.bincount(ids // 8).tolist(), [4] * 9)

    def test_weights_multiply_the_batch_weights(self):
        # the loader's weights are 2: each kept weight is 2 / (8 p).
        d = ads.Loss(50, loss=given_losses)
        bts = ads.BatchThenSample(d, 8)
        losses = torch.arange(1.0, 9.0)
        _, _, w, ids = bts.select(torch.zeros(8, 1), torch.zeros(8),
                                  torch.arange(8), losses,
                                  weights=torch.full((8,), 2.0))
        p = losses[ids] / losses.sum()
        np.testing.assert_allclose(w, 2 / (8 * p), rtol=1e-5)

    def test_same_seed_same_choice(self):
        first = [b[3].tolist() for b in self.run_epoch(5, seed=3)]
        self.assertEqual(first, [b[3].tolist() for b in self.run_epoch(5, 3)])
        self.assertNotEqual(first, [b[3].tolist()
                                    for b in self.run_epoch(5, 4)])

    def test_model_back_in_training_mode(self):
        d = ads.Loss(50)
        model = torch.nn.Sequential(torch.nn.Linear(3, 3),
                                    torch.nn.Dropout(0.5))
        modes = []
        model.register_forward_hook(lambda m, i, o: modes.append(m.training))
        list(ads.BatchThenSample(d, 8).batches(self.loader(2), model))
        self.assertEqual(modes, [False, False])
        self.assertTrue(model.training)


class WeightedLoss(unittest.TestCase):
    def test_by_hand(self):
        # loss [1, 2, 3], w [1, 1, 2]: (1 + 2 + 6) / 4 = 2.25
        got = ads.weighted_loss(torch.tensor([1.0, 2.0, 3.0]), [1.0, 1.0, 2.0])
        self.assertAlmostEqual(got.item(), 2.25)

    def test_zero_weights(self):
        loss = torch.tensor([1.0, 2.0], requires_grad=True)
        got = ads.weighted_loss(loss, torch.zeros(2))
        got.backward()
        self.assertEqual((got.item(), loss.grad.tolist()), (0.0, [0.0, 0.0]))

    def test_sizes_must_match(self):
        # torch.dot's "inconsistent tensor size, expected tensor [3] and
        # src [2] to have the same number of elements" (a RuntimeError,
        # naming neither argument); a weight for several losses was the
        # same error. A weight per sample of a 2-D loss is still taken.
        for loss, w, want in ((torch.ones(3), [1.0, 1.0], "3 .* 2"),
                              (torch.ones(2), [1.0, 1.0, 1.0], "2 .* 3"),
                              (torch.ones(3), 1.0, "3 .* 1")):
            with self.assertRaisesRegex(
                    ValueError, "weighted_loss: per_sample holds " + want,
                    msg=(loss, w)):
                ads.weighted_loss(loss, w)
        got = ads.weighted_loss(torch.ones(2, 1), [[1.0], [3.0]])
        self.assertAlmostEqual(got.item(), 1.0)


class Configs(unittest.TestCase):
    def refused(self, config, key, **kw):
        with self.assertRaises(ValueError) as e:
            ads.make(config, **kw)
        self.assertIn(key, str(e.exception))
        return str(e.exception)

    def test_bad_keys_named(self):
        self.refused({"strategy": "Loss", "ratio": 50, "ratoi": 3}, "ratoi")
        self.refused({"strategy": "Loss"}, ".ratio")
        self.refused({"ratio": 50}, ".strategy")
        self.refused({"strategy": "Loss", "ratio": 150}, ".ratio")
        self.refused({"strategy": "Loss", "ratio": 50.5}, ".ratio")
        self.refused({"strategy": "Loss", "ratio": 50, "period": -1}, "period")
        self.refused({"strategy": "Loss", "ratio": 50,
                      "sample_then_batch": "yes"}, "sample_then_batch")
        self.refused({"strategy": "Uncertainty", "ratio": 50}, "score_metric")
        self.refused({"strategy": "Uncertainty", "ratio": 50,
                      "score_metric": "Variance"}, "score_metric")
        self.refused({"strategy": "Uncertainty", "ratio": 50,
                      "score_metric": "Margin", "balance": True}, "balance")
        self.refused({"strategy": "RS2", "ratio": 50}, "with_replacement")
        self.refused({"strategy": "RS2", "ratio": 50, "period": 2,
                      "with_replacement": True}, "period")
        self.refused({"strategy": "RHOLoss", "ratio": 50,
                      "holdout_set_strategy": "Triple"},
                     "holdout_set_strategy", irreducible_loss=[0.0])
        self.refused({"strategy": "Loss", "ratio": 50,
                      "score_metric": "Margin"}, "score_metric")
        self.assertIn("Modyn's", self.refused(
            {"strategy": "Craig", "ratio": 50}, ".strategy"))
        self.refused({"strategy": "Magic", "ratio": 50}, ".strategy")

    def test_no_means_none(self):
        self.assertIsNone(ads.make({"strategy": "No"}))
        self.assertIsNone(ads.from_env({}))
        self.assertIsNone(ads.from_env({"AEGIS_DOWNSAMPLING":
                                        '{"strategy": "No"}'}))

    def test_from_env(self):
        env = {"AEGIS_DOWNSAMPLING": json.dumps(
            {"strategy": "Loss", "ratio": 50, "ratio_max": 100,
             "sample_then_batch": False, "period": 1}),
            "AEGIS_SEED": "7", "AEGIS_TRIGGER": "3"}
        d = ads.from_env(env)
        self.assertIsInstance(d, ads.Loss)
        self.assertEqual((d.seed, d.trigger, d.ratio, d.sample_then_batch),
                         (7, 3, 50, False))
        env["AEGIS_DOWNSAMPLING"] = '{"strategy": "Loss", "ratio": 50,'
        with self.assertRaisesRegex(ValueError, "AEGIS_DOWNSAMPLING"):
            ads.from_env(env)
        env["AEGIS_DOWNSAMPLING"] = '{"strategy": "Loss", "ratio": 500}'
        with self.assertRaisesRegex(ValueError, r"AEGIS_DOWNSAMPLING\.ratio"):
            ads.from_env(env)

    def test_promille(self):
        d = ads.make({"strategy": "Loss", "ratio": 125, "ratio_max": 1000})
        self.assertEqual(d.target_size(1000), 125)


class ConfigInForce(unittest.TestCase):
    A = {"strategy": "Loss", "ratio": 50}
    B = {"strategy": "GradNorm", "ratio": 30}
    C = {"strategy": "No"}

    def test_warmup_and_thresholds(self):
        # warm-up 2; thresholds [1, 3] count from its end: A for trigger
        # 2, B for 3-4, C (No: none) from 5.
        multi = {"downsampling_list": [self.A, self.B, self.C],
                 "downsampling_thresholds": [1, 3]}
        got = [ads.config_in_force(multi, t, warmup_triggers=2)
               for t in range(7)]
        self.assertEqual(got, [None, None, self.A, self.B, self.B, None, None])

    def test_single(self):
        got = [ads.config_in_force(self.A, t, 1) for t in (0, 1, 9)]
        self.assertEqual(got, [None, self.A, self.A])
        self.assertIsNone(ads.config_in_force(None, 4))

    def test_bad_schedules(self):
        with self.assertRaisesRegex(ValueError, "downsampling_thresholds"):
            ads.config_in_force({"downsampling_list": [self.A, self.B],
                                 "downsampling_thresholds": []}, 0)
        with self.assertRaisesRegex(ValueError, "downsampling_thresholds"):
            ads.config_in_force({"downsampling_list": [self.A, self.B, self.A],
                                 "downsampling_thresholds": [4, 4]}, 0)
        with self.assertRaisesRegex(ValueError,
                                    r"downsampling_list\[1\]\.ratio"):
            ads.config_in_force({"downsampling_list": [self.A, {
                "strategy": "Loss"}], "downsampling_thresholds": [2]}, 0)


# ---------------------------------------------------------------------------
# Sample then batch, on a dataset state folder written as aegis writes one
# (src/pipeline/keylog.h, filetab.h): one binary file of 20-byte records,
# an int32 label and 4 float32 features.

RECORD = np.dtype([("label", "<i4"), ("x", "<f4", 4)])


def write_dataset(folder, n):
    data = os.path.join(folder, "data")
    state = os.path.join(folder, "state")
    os.makedirs(data)
    os.makedirs(state)
    rng = np.random.default_rng(2)
    records = np.zeros(n, RECORD)
    records["label"] = rng.integers(0, 3, n)
    records["x"] = rng.normal(size=(n, 4))
    records.tofile(os.path.join(data, "part.bin"))
    with open(os.path.join(state, "dataset.json"), "w") as f:
        json.dump({"dir": data, "format": "binary", "label_size": 4}, f)
    name = b"part.bin"
    entry = struct.pack("<II", 0, len(name)) + name
    with open(os.path.join(state, "files.log"), "wb") as f:
        f.write(b"AEGFILE1" + struct.pack("<II", 1, 0)
                + struct.pack("<I", zlib.crc32(name, zlib.crc32(entry[:8])))
                + entry)
    samples = np.zeros(n, aegis_pipeline.SAMPLE_DTYPE)
    samples["key"] = np.arange(n)
    samples["label"] = records["label"]
    samples["len"] = RECORD.itemsize
    samples["offset"] = np.arange(n) * RECORD.itemsize
    payload = samples.tobytes()
    head = [0x314B4241, n, 0, 0, 0, n * RECORD.itemsize, 0, 0]
    crc = zlib.crc32(payload, zlib.crc32(struct.pack("<IIIIQQII", *head)))
    head[6] = crc
    with open(os.path.join(state, "keys.log"), "wb") as f:
        f.write(struct.pack("<8sII", b"AEGKEYS1", 1, 40)
                + struct.pack("<IIIIQQII", *head) + payload)
    return state, records


def write_trainset(path, keys, weights, seed=11, trigger=2):
    body = struct.pack("<8sQQII", b"AEGTSET1", len(keys), seed, trigger, 0)
    for k, w in zip(keys, weights):
        body += struct.pack("<QfI", k, w, 0)
    with open(path, "wb") as f:
        f.write(body + struct.pack("<I", zlib.crc32(body)))


def features(mv):
    return np.frombuffer(mv, "<f4", offset=4)


class CountingModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.layer = torch.nn.Linear(4, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.layer(x)


class SampleThenBatch(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.state, self.records = write_dataset(self.tmp.name, 200)
        self.keys = list(range(0, 200, 2))       # 100 of the 200 samples
        self.trainset = os.path.join(self.tmp.name, "t.tset")
        write_trainset(self.trainset, self.keys, [1.0] * 100)

    def tearDown(self):
        self.tmp.cleanup()

    def expected(self, d, model, epoch):
        """The choice made by hand: every sample of the training set
        informed in key order, with the model's outputs."""
        d.set_epoch(epoch)
        x = torch.from_numpy(self.records["x"][self.keys])
        with torch.no_grad():
            d.inform_samples(self.keys, model.layer(x),
                             torch.from_numpy(
                                 self.records["label"][self.keys]).long())
        ids, w = d.select_points()
        order = np.argsort(ids)
        return ids[order], w[order]

    def test_written_once_and_read_back(self):
        model = CountingModel()
        d = ads.make({"strategy": "Loss", "ratio": 30,
                      "sample_then_batch": True, "period": 2}, 5, 2)
        got = ads.sample_then_batch(d, model, 0, batch_size=16,
                                    trainset=self.trainset,
                                    dataset=self.state,
                                    bytes_parser=features)
        path = self.trainset + ".sel0"
        self.assertEqual(got.keys.tolist(), aegis_pipeline.read_trainset(
            path)[0].tolist())
        keys, weights, seed, trigger = aegis_pipeline.read_trainset(path)
        self.assertEqual((seed, trigger, len(keys)), (11, 2, 30))
        want_keys, want_w = self.expected(
            ads.make({"strategy": "Loss", "ratio": 30}, 5, 2), model, 0)
        self.assertEqual(keys.tolist(), want_keys.tolist())
        np.testing.assert_allclose(weights, want_w, rtol=1e-5)
        self.assertEqual(model.calls, 7)            # ceil(100 / 16)

        # epoch 1 (same period) and a retried job's epoch 0: read, not
        # scored again
        for epoch in (1, 0):
            again = ads.sample_then_batch(d, model, epoch, batch_size=16,
                                          trainset=self.trainset,
                                          dataset=self.state,
                                          bytes_parser=features)
            self.assertEqual(again.keys.tolist(), keys.tolist())
        self.assertEqual(model.calls, 7)
        # epoch 2 starts a period: scored again, into .sel2
        ads.sample_then_batch(d, model, 2, batch_size=16,
                              trainset=self.trainset, dataset=self.state,
                              bytes_parser=features)
        self.assertEqual(model.calls, 14)
        self.assertTrue(os.path.exists(self.trainset + ".sel2"))
        self.assertEqual([f for f in os.listdir(self.tmp.name)
                          if ".tmp" in f], [])

    def test_training_set_over_the_choice(self):
        d = ads.make({"strategy": "Uncertainty", "ratio": 20,
                      "score_metric": "Entropy", "sample_then_batch": True})
        got = ads.sample_then_batch(d, CountingModel(), 0, batch_size=32,
                                    trainset=self.trainset,
                                    dataset=self.state,
                                    bytes_parser=features, keys=True)
        rows = list(got)
        self.assertEqual(len(rows), 20)
        for x, label, weight, key in rows:
            self.assertTrue(np.array_equal(x, self.records["x"][key]))
            self.assertEqual(label, self.records["label"][key])
            self.assertEqual(weight, 1.0)
        self.assertEqual(sorted(k for *_, k in rows), got.keys.tolist())
        # two DataLoader workers: each key once, with its own sample
        loader = torch.utils.data.DataLoader(got, batch_size=None,
                                             num_workers=2)
        rows = [(x, key) for x, _, _, key in loader]
        self.assertEqual(sorted(k for _, k in rows), got.keys.tolist())
        self.assertTrue(all(np.array_equal(x, self.records["x"][k])
                            for x, k in rows))
        plain = aegis_pipeline.TrainingSet(self.trainset + ".sel0",
                                           self.state, weights=False)
        self.assertEqual(len(next(iter(plain))), 2)   # the default unchanged

    def test_rs2_without_a_forward_pass(self):
        d = ads.make({"strategy": "RS2", "ratio": 50,
                      "with_replacement": False}, 1, 2)
        model = CountingModel()
        seen = []
        for epoch in range(2):
            got = ads.sample_then_batch(d, model, epoch,
                                        trainset=self.trainset,
                                        dataset=self.state)
            seen += got.keys.tolist()
        self.assertEqual(model.calls, 0)
        self.assertEqual(sorted(seen), self.keys)

    def test_balanced_uncertainty(self):
        d = ads.make({"strategy": "Uncertainty", "ratio": 10,
                      "score_metric": "Margin", "balance": True,
                      "sample_then_batch": True})
        got = ads.sample_then_batch(d, CountingModel(), 0, batch_size=32,
                                    trainset=self.trainset,
                                    dataset=self.state,
                                    bytes_parser=features)
        labels = self.records["label"][self.keys]
        chosen = self.records["label"][got.keys]
        for y in range(3):
            self.assertEqual((chosen == y).sum(),
                             max(int((labels == y).sum()) * 10 // 100, 1))


if __name__ == "__main__":
    unittest.main()
