/*-------------------------------------------------------------------------
 *
 * hashing.c
 *	  From a value to the member that owns it: hash support functions of
 *	  hash operator families, and the hash of one value.
 *
 * Table distribution and shuffles must agree on where a value lives, so
 * both hash with the standard hash support function (HASHSTANDARD_PROC)
 * of a hash operator family and map the hash with rx_member_for_hash().
 * Within one family, equal values of different types hash alike (int4 and
 * int8 in integer_ops), which is what makes a shuffle on a cross-type
 * join key land next to the table distributed on the other type.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/hash.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "cluster/hashing.h"
#include "cluster/metadata.h"

/*
 * Polymorphic hash opclasses (array_ops, enum_ops, range_ops, record_ops,
 * multirange_ops) register their support functions under the pseudo-type,
 * not under each concrete type.
 */
static Oid
polymorphic_type_for(Oid type)
{
	if (OidIsValid(get_element_type(type)))
		return ANYARRAYOID;
	if (type_is_enum(type))
		return ANYENUMOID;
	if (type_is_range(type))
		return ANYRANGEOID;
	if (type_is_multirange(type))
		return ANYMULTIRANGEOID;
	if (type_is_rowtype(type))
		return RECORDOID;
	return InvalidOid;
}

/* rx_hash_proc_for(), or InvalidOid when the family has none for type */
static Oid
hash_proc_or_none(Oid opfamily, Oid type)
{
	Oid			proc;
	Oid			base;
	Oid			opclass;
	Oid			poly;

	proc = get_opfamily_proc(opfamily, type, type, HASHSTANDARD_PROC);
	if (OidIsValid(proc))
		return proc;

	/* a domain hashes as its base type */
	base = getBaseType(type);
	if (base != type)
	{
		proc = get_opfamily_proc(opfamily, base, base, HASHSTANDARD_PROC);
		if (OidIsValid(proc))
			return proc;
	}

	/* binary-coercible types use the opclass of the type they coerce to */
	opclass = GetDefaultOpClass(base, HASH_AM_OID);
	if (OidIsValid(opclass) && get_opclass_family(opclass) == opfamily)
	{
		Oid			intype = get_opclass_input_type(opclass);

		proc = get_opfamily_proc(opfamily, intype, intype, HASHSTANDARD_PROC);
		if (OidIsValid(proc))
			return proc;
	}

	poly = polymorphic_type_for(base);
	if (OidIsValid(poly))
	{
		proc = get_opfamily_proc(opfamily, poly, poly, HASHSTANDARD_PROC);
		if (OidIsValid(proc))
			return proc;
	}
	return InvalidOid;
}

Oid
rx_hash_proc_for(Oid opfamily, Oid type)
{
	Oid			proc = hash_proc_or_none(opfamily, type);

	if (!OidIsValid(proc))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("hash operator family %u has no hash function for type %s",
						opfamily, format_type_be(type))));
	return proc;
}

/*
 * Can a value of type, compared with a column of coltype by an equality
 * operator of the column's hash family, be routed by its own hash?  A
 * hash family hashes equal values of its types alike (that is what lets a
 * cross-type operator into it), so it can when the family has a hash
 * function for the type: an integer against a bigint column (integer_ops),
 * text against a varchar column (text_ops).
 */
bool
rx_hashes_alike(Oid opfamily, Oid coltype, Oid type)
{
	return type == coltype || OidIsValid(hash_proc_or_none(opfamily, type));
}

Oid
rx_default_hash_opfamily(Oid type)
{
	Oid			opclass = GetDefaultOpClass(type, HASH_AM_OID);

	if (!OidIsValid(opclass))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type %s has no default hash operator class",
						format_type_be(type)),
				 errdetail("Rows are placed on members by a hash of the value, so the type must be hashable.")));
	return get_opclass_family(opclass);
}

/* like rx_default_hash_opfamily(), but InvalidOid instead of an error */
Oid
rx_default_hash_opfamily_or_none(Oid type)
{
	Oid			opclass = GetDefaultOpClass(type, HASH_AM_OID);

	return OidIsValid(opclass) ? get_opclass_family(opclass) : InvalidOid;
}

int
rx_member_for_datum(FmgrInfo *hashfn, Oid collation, Datum value,
					bool isnull, int nmembers)
{
	uint32		hash;

	if (isnull || nmembers <= 1)
		return 0;
	hash = DatumGetUInt32(FunctionCall1Coll(hashfn, collation, value));
	return rx_member_for_hash(hash, nmembers);
}

/*
 * The member that owns the rows of relid (a hash-distributed table) whose
 * distribution column equals value, of type (the column's, or one that
 * hashes alike: rx_hashes_alike()): what routing by key needs (direct
 * dispatch, UPDATE/DELETE and row locks by key, keyed lookups).
 */
int
rx_member_of_key(Oid relid, Oid type, Datum value, bool isnull, int nmembers)
{
	RxTableDist dist;
	FmgrInfo	hashfn;
	Oid			coltype,
				collation;
	int32		typmod;

	rx_table_distribution(relid, &dist);
	if (dist.method != RX_DIST_HASH)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is no longer distributed", get_rel_name(relid)),
				 errhint("Run the statement again.")));
	get_atttypetypmodcoll(relid, dist.distcol, &coltype, &typmod, &collation);
	fmgr_info(rx_hash_proc_for(dist.hash_opfamily, type), &hashfn);
	return rx_member_for_datum(&hashfn, collation, value, isnull, nmembers);
}
