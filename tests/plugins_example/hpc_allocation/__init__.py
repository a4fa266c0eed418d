"""An HPC centre's GPU allocation: a third-party option for compute-advisor (docs/plugins.md).

Billed per GPU-hour used at the centre's price; the allocation starts after a queue, and the centre
has only so many GPUs. Everything comes from the knowledge base: the price row and the assumptions
of option ``hpc_allocation`` (loaded with the seeds), and general assumptions such as
``gpu_failure_rate_per_gpu_year``. The SDK's ``OfferKernel`` does the rest as it does for the
built-in options: the offer's hard constraints, efficiency, stability, usability, the work left to
the team and the one money scale. Its sentences are messages (``msg``) whose words, in English
and Chinese, the package ships in ``locales/<lang>.toml``.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.sdk import (
    ZERO,
    Assessment,
    Candidate,
    Columns,
    LineItem,
    OfferKernel,
    OptionPlugin,
    OptionSpec,
    Profile,
    ProfileField,
    Quote,
    Range,
    money_range,
    msg,
)

KEY = "hpc_allocation"
REGION = "CN"
GPUS_PER_NODE = 8
#: the profile field the option declares: which of the centre's queues the team's jobs go to
QUEUE = "hpc_queue"


class HpcKernel(OfferKernel):
    setup_steps = msg("hpc_allocation.setup", "the centre's batch scheduler and software modules")
    # the assumptions it reads beyond the shared methodology's: `seeds check` refuses seeds that lack one
    requires = ("priority_price_factor", "detection_hours", "restart_hours")

    def compile_group(self, gpu_model: str | None) -> list[Candidate]:
        """The centre sells its allocation whatever GPU model a team names: its price row in the region."""
        rows = [
            r
            for r in self.knowledge.component(KEY, "gpu_hour", as_of=self.as_of, region=REGION)
            if r.unit == "per_gpu_hour"
        ]
        priced = [o for r in rows[:1] if (o := self.price(r)) is not None]  # None: no rate converts it
        return [self.candidate(o, per_machine=GPUS_PER_NODE) for o in priced]

    def quotes(self, at: Columns, candidates: Sequence[Candidate]) -> list[Quote]:
        # the profile field this option declares (``OptionSpec.profile_fields``): one value for a whole
        # request, or a batch's group of profiles
        factor = self.value("priority_price_factor") if at.profile.option(QUEUE) == "priority" else None
        found = []
        for c in candidates:
            # one row of figures per end of the ranges the caller asks for (``at.ends``: 0 low, 1 expected,
            # 2 high); ``at.useful`` is a number, or one element per profile in a batch: element-wise only
            rows = []
            for e in at.ends:
                price = c.per_gpu[e] if factor is None else c.per_gpu[e] * factor[e]
                annual = price * at.useful
                rows.append((annual, annual * at.horizon))
            annual_range, total_range = at.ranges(rows)
            queue = self.lead(c)  # the row's lead time, else the option's lead_time_days
            found.append(
                self.finish(
                    at,
                    c,
                    annual=annual_range,
                    total=total_range,
                    paid=Range.point(at.useful),
                    committed=False,
                    efficiency=self.efficiency(at, queue),
                    stability=self.stability(at),
                    infra_fte=self.machine_work(c, at, at.utilization),
                    lines=(("gpu_hours", annual_range, ZERO, total_range),),
                    violations=self.constraints(c, at),  # capacity, lead time, residency…
                    waiting_days=queue,
                )
            )
        return found

    def materialise(self, profile: Profile, quote: Quote) -> Assessment:
        c = quote.candidate
        assert c is not None
        key, annual, upfront, total = quote.lines[0]
        priority = profile.option(QUEUE) == "priority"
        line = LineItem(
            key=key,
            label=msg("hpc_allocation.line.gpu_hours", "Allocated GPU-hours"),
            annual=annual,
            upfront=upfront,
            basis="useful GPU-hours × price per GPU-hour" + (" × the priority price factor" if priority else ""),
            sources=(*c.offer.refs, self.ref("priority_price_factor")) if priority else c.offer.refs,
            total=total,
        )
        shown = money_range(annual, profile.currency)
        provider = self.provider_name(c.offer.row.provider)  # by name, in the answer's language
        note = msg(
            "hpc_allocation.note", f"HPC allocation: {shown} a year at {provider}.", annual=shown, provider=provider
        )
        return self.assessment_of(
            profile,
            quote,
            breakdown=(line,),
            notes=(note,),
            efficiency_refs=self.efficiency_refs(self.lead_refs(c)),
            stability_refs=self.stability_refs("detection_hours", "restart_hours"),
            usability_refs=self.usability_refs(profile),
        )


class HpcAllocation(OptionPlugin):
    sdk = ">=4,<5"  # the SDK versions this plugin is written for: the service refuses others at start
    spec = OptionSpec(
        key=KEY,
        name="HPC centre allocation",
        description="GPU-hours on a regional HPC centre's shared cluster: billed per GPU-hour used, after a queue.",
        version="0.1.0",
        profile_fields=(
            ProfileField(
                name=QUEUE,
                description="The centre's queue: standard, or priority, billed at priority_price_factor × the price.",
                kind="string",
                choices=("standard", "priority"),
                default="standard",
            ),
        ),
    )
    kernel = HpcKernel
    # the words of the sentences above, by language: the package's locales/<lang>.toml
    messages = OptionPlugin.catalogs(__name__, "locales/{lang}.toml")


plugin = HpcAllocation()
