"""Version-free views of the requests of SASL, ACLs, SCRAM credentials, delegation tokens and
UpdateFeatures.

``wire.decode_request`` hands a handler the kio entity of the negotiated version; a handler
reads it through the view of its API (``DecodedRequest[XRequestView]``), a ``Protocol``
naming the fields every supported version has (``api_versions``), with the types kio gives
them (kio's nominal ints and strings are ``int`` and ``str`` subclasses).  A field some
versions lack is read with ``wire.optional`` and a declared type; where versions differ in
shape, ``<Api>RequestV<low>To<high>View`` names the fields of those versions (the handler
casts to it after testing ``api_version``).
tests/unit/test_request_views.py checks each view against every supported version's schema.
"""

from __future__ import annotations

import datetime
from typing import Protocol


class SaslHandshakeRequestView(Protocol):
    """SaslHandshake request, v1-v1."""

    mechanism: str


class SaslAuthenticateRequestView(Protocol):
    """SaslAuthenticate request, v0-v2."""

    auth_bytes: bytes


class DescribeAclsRequestView(Protocol):
    """DescribeAcls request, v1-v3."""

    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int


class AclCreationView(Protocol):
    """``creations`` of CreateAclsRequestView."""

    resource_type: int
    resource_name: str
    resource_pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class CreateAclsRequestView(Protocol):
    """CreateAcls request, v1-v3."""

    creations: tuple[AclCreationView, ...]


class DeleteAclsFilterView(Protocol):
    """``filters`` of DeleteAclsRequestView."""

    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int


class DeleteAclsRequestView(Protocol):
    """DeleteAcls request, v1-v3."""

    filters: tuple[DeleteAclsFilterView, ...]


class UserNameView(Protocol):
    """``users`` of DescribeUserScramCredentialsRequestView."""

    name: str


class DescribeUserScramCredentialsRequestView(Protocol):
    """DescribeUserScramCredentials request, v0-v0."""

    users: tuple[UserNameView, ...] | None


class ScramCredentialDeletionView(Protocol):
    """``deletions`` of AlterUserScramCredentialsRequestView."""

    name: str
    mechanism: int


class ScramCredentialUpsertionView(Protocol):
    """``upsertions`` of AlterUserScramCredentialsRequestView."""

    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


class AlterUserScramCredentialsRequestView(Protocol):
    """AlterUserScramCredentials request, v0-v0."""

    deletions: tuple[ScramCredentialDeletionView, ...]
    upsertions: tuple[ScramCredentialUpsertionView, ...]


class FeatureUpdateKeyView(Protocol):
    """``feature_updates`` of UpdateFeaturesRequestView."""

    feature: str
    max_version_level: int


class UpdateFeaturesRequestView(Protocol):
    """UpdateFeatures request, v0-v2. Only in some versions: ``allow_downgrade`` (v0),
    ``upgrade_type`` and ``validate_only`` (v1+)."""

    feature_updates: tuple[FeatureUpdateKeyView, ...]


class CreatableRenewersView(Protocol):
    """``renewers`` of CreateDelegationTokenRequestView."""

    principal_type: str
    principal_name: str


class CreateDelegationTokenRequestView(Protocol):
    """CreateDelegationToken request, v1-v3."""

    renewers: tuple[CreatableRenewersView, ...]
    max_lifetime: datetime.timedelta


class CreateDelegationTokenRequestV3To3View(CreateDelegationTokenRequestView, Protocol):
    """CreateDelegationToken request, v3: the owner (KIP-373; null: the requester)."""

    owner_principal_type: str | None
    owner_principal_name: str | None


class RenewDelegationTokenRequestView(Protocol):
    """RenewDelegationToken request, v1-v2."""

    hmac: bytes
    renew_period: datetime.timedelta


class ExpireDelegationTokenRequestView(Protocol):
    """ExpireDelegationToken request, v1-v2."""

    hmac: bytes
    expiry_time_period: datetime.timedelta


class DescribeDelegationTokenOwnerView(Protocol):
    """``owners`` of DescribeDelegationTokenRequestView."""

    principal_type: str
    principal_name: str


class DescribeDelegationTokenRequestView(Protocol):
    """DescribeDelegationToken request, v1-v3."""

    owners: tuple[DescribeDelegationTokenOwnerView, ...] | None


# -- client quotas (coordinator.protocol.quota_handlers) -----------------------------------------


class QuotaComponentView(Protocol):
    """``components`` of DescribeClientQuotasRequestView."""

    entity_type: str
    match_type: int
    match: str | None


class DescribeClientQuotasRequestView(Protocol):
    """DescribeClientQuotas request, v0-v1."""

    components: tuple[QuotaComponentView, ...]
    strict: bool


class QuotaEntityView(Protocol):
    """``entity`` of an AlterClientQuotas entry."""

    entity_type: str
    entity_name: str | None


class QuotaOpView(Protocol):
    """``ops`` of an AlterClientQuotas entry."""

    key: str
    value: float
    remove: bool


class QuotaAlterEntryView(Protocol):
    """``entries`` of AlterClientQuotasRequestView."""

    entity: tuple[QuotaEntityView, ...]
    ops: tuple[QuotaOpView, ...]


class AlterClientQuotasRequestView(Protocol):
    """AlterClientQuotas request, v0-v1."""

    entries: tuple[QuotaAlterEntryView, ...]
    validate_only: bool
